//! Kubernetes name and label syntax checks (apimachinery `util/validation`), returning the
//! same messages.
//!
//! OWNER: formats helper — stub until filled in.
