//! String formats (`format:`) with the semantics of kube-apiserver's CRD validation.
//!
//! OWNER: formats helper — stub until filled in.

/// Whether `format` is one Kubernetes validates (unknown formats are ignored).
pub fn is_supported(format: &str) -> bool {
    let _ = format;
    false
}

/// Whether `value` is valid for `format`. Unknown formats accept everything.
pub fn matches(format: &str, value: &str) -> bool {
    let _ = (format, value);
    true
}
