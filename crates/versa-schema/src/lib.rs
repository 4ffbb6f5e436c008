//! versa-schema: the structural schema engine.
//!
//! Takes `JSONSchemaProps` (k8s-openapi) and JSON values, nothing else: it knows nothing of
//! definitions, HTTP or storage. A schema is lowered once into [`Structural`]; every algorithm
//! — the structural check, pruning, defaulting, value validation — walks that form.

pub mod default;
pub mod defaults;
pub mod field;
pub mod formats;
pub mod listtype;
pub mod metadata;
pub mod names;
pub mod objectmeta;
pub mod pattern;
pub mod pipeline;
pub mod prune;
pub mod ratchet;
pub mod structural;
pub mod structural_check;
pub mod text;
pub mod validation;
mod walk;

pub use field::{BadValue, Error, ErrorList, ErrorType, Path};
pub use structural::{LowerError, Structural, Type};
