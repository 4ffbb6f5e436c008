//! The protobuf wire format, as far as Kubernetes' messages use it: keys (field number and wire
//! type), varints (at most ten bytes), length-delimited payloads checked against what is left of
//! their buffer, UTF-8 strings, and messages whose fields are all singular payloads. Nothing
//! here knows a message's fields; `kinds` does.

use super::error::{ProtobufError, Result};

/// Wire type of varint fields.
pub(super) const VARINT: u8 = 0;
/// Wire type of length-delimited fields (strings, bytes, messages, map entries).
pub(super) const LEN: u8 = 2;

/// Reads one message's fields from its buffer; `message` names it in errors.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    message: &'static str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8], message: &'static str) -> Self {
        Reader { buf, message }
    }

    pub(super) fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.buf.split_first().ok_or(ProtobufError::Truncated { message: self.message })?;
            self.buf = rest;
            // The tenth byte holds bit 63 only.
            if shift == 63 && byte > 1 {
                break;
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::Varint { message: self.message })
    }

    /// The next field's number and wire type, or `None` at the end of the message.
    pub(super) fn key(&mut self) -> Result<Option<(u64, u8)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 {
            return Err(ProtobufError::FieldZero { message: self.message });
        }
        Ok(Some((number, (key & 7) as u8)))
    }

    /// A length-delimited field's payload.
    pub(super) fn bytes(&mut self) -> Result<&'a [u8]> {
        let truncated = ProtobufError::Truncated { message: self.message };
        let len = usize::try_from(self.varint()?).map_err(|_| truncated.clone())?;
        if len > self.buf.len() {
            return Err(truncated);
        }
        let (payload, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(payload)
    }
}

/// A `string` field's text.
pub(super) fn string(bytes: &[u8], message: &'static str, field: &'static str) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtobufError::Utf8 { message, field })
}

/// A payload's wire type is the one its field expects, or the error naming both.
pub(super) fn expect(wire: u8, expected: u8, message: &'static str, field: &'static str) -> Result<()> {
    if wire == expected { Ok(()) } else { Err(ProtobufError::WireType { message, field, wire, expected }) }
}

/// The payloads of a message whose fields are all singular and length-delimited
/// (`runtime.Unknown`, `FieldsV1`), one per entry of `fields` (number, name), `None` when
/// absent; any other field, or one given twice, is an error.
pub(super) fn payloads<'a, const N: usize>(
    data: &'a [u8],
    message: &'static str,
    fields: [(u64, &'static str); N],
) -> Result<[Option<&'a [u8]>; N]> {
    let mut found = [None; N];
    let mut reader = Reader::new(data, message);
    while let Some((number, wire)) = reader.key()? {
        let Some(((_, field), slot)) = fields.iter().zip(found.iter_mut()).find(|((n, _), _)| *n == number) else {
            return Err(ProtobufError::UnknownField { message, number, wire });
        };
        expect(wire, LEN, message, field)?;
        let payload = reader.bytes()?;
        if slot.replace(payload).is_some() {
            return Err(ProtobufError::Duplicate { message, field });
        }
    }
    Ok(found)
}
