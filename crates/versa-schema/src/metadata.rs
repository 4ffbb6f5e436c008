//! Validation of `metadata` of custom resources and embedded resources (ObjectMeta rules).
//!
//! OWNER: formats helper — stub until filled in.
