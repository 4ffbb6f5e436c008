//! versa-apiextensions: definitions of versioned custom resources, and their validation.
//!
//! A [`ResourceDefinition`] (`versa.dev/v1`) carries exactly the spec and status of an
//! `apiextensions.k8s.io/v1` `CustomResourceDefinition`; [`types`] converts between the two
//! documents, [`defaults`] applies the v1 defaults, [`validation`] accepts or rejects a definition
//! with kube-apiserver's rules, field paths and messages, and [`version`] orders version names the
//! way Kubernetes does, and [`cel_conversion`] compiles versa's declarative conversion rules
//! (`spec.conversion.cel`). Everything here is pure: values in, values out, no I/O.

pub mod cel_conversion;
pub mod defaults;
pub mod diff;
pub mod types;
pub mod validation;
pub mod version;

pub use defaults::{set_defaults, set_document_defaults};
pub use types::{DocumentKind, ParseError, ResourceDefinition};
pub use validation::{validate_definition, validate_definition_update, warnings_on_create, warnings_on_update};
pub use version::{compare_kube_aware_versions, sort_by_version_priority};
