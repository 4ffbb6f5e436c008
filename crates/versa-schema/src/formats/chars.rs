//! Character classes of Go that several format checks share: the `\s` of Go's regular
//! expressions and the hexadecimal digits of its parsers.

/// Go's `\s` in regexps: ASCII `[\t\n\f\r ]` (no vertical tab).
pub(super) fn is_go_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

pub(super) fn hex_val(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}
