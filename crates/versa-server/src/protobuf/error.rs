//! Why a protobuf body was refused: one variant per way the input can go wrong, each naming the
//! protobuf message and field where it did.

/// Why a body could not be decoded. Messages name the protobuf message (`ObjectMeta`) and the
/// field (by its JSON name) where the input went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("not a Kubernetes protobuf body: it does not start with the bytes \"k8s\\x00\"")]
    Magic,
    #[error("the protobuf body is empty after its \"k8s\\x00\" prefix")]
    Empty,
    #[error("{message}: the protobuf data ends inside a field")]
    Truncated { message: &'static str },
    #[error("{message}: a protobuf varint runs past 64 bits")]
    Varint { message: &'static str },
    #[error("{message}: protobuf field number 0 is invalid")]
    FieldZero { message: &'static str },
    #[error(
        "{message}: field number {number} (wire type {wire}) is not one versa decodes; \
         refusing the object rather than dropping the field"
    )]
    UnknownField { message: &'static str, number: u64, wire: u8 },
    #[error("{message}.{field}: protobuf wire type {wire}, expected {expected}")]
    WireType { message: &'static str, field: &'static str, wire: u8, expected: u8 },
    #[error("{message}.{field} is given more than once")]
    Duplicate { message: &'static str, field: &'static str },
    #[error("{message}.{field}: the key {key:?} is given more than once")]
    DuplicateKey { message: &'static str, field: &'static str, key: String },
    #[error("{message}.{field}: {value} does not fit in an int32")]
    Int32 { message: &'static str, field: &'static str, value: i64 },
    #[error("{message}.{field} is not valid UTF-8")]
    Utf8 { message: &'static str, field: &'static str },
    #[error("{message}: {seconds} seconds from 1970 is outside the years 0000 to 9999")]
    TimeRange { message: &'static str, seconds: i64 },
    #[error("ManagedFieldsEntry.fieldsV1 is CBOR, which versa does not decode")]
    FieldsV1Cbor,
    #[error("ManagedFieldsEntry.fieldsV1 is not valid JSON: {0}")]
    FieldsV1Json(String),
    #[error("runtime.Unknown.contentEncoding is {0:?}: versa decodes only unencoded objects")]
    ContentEncoding(String),
    #[error("runtime.Unknown.contentType is {0:?}: versa decodes only protobuf objects")]
    ContentType(String),
    #[error("the protobuf envelope names no kind")]
    NoKind,
    #[error("versa does not decode kind {kind:?} (apiVersion {api_version:?}) from protobuf; send it as JSON")]
    Kind { api_version: String, kind: String },
}

pub(super) type Result<T> = std::result::Result<T, ProtobufError>;
