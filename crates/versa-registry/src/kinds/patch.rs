//! What strategic merge patch knows of a kind (the `patchStrategy`/`patchMergeKey` struct tags
//! of its Go type in `k8s.io/api`): each kind with a strategic merge patch declares its
//! [`Schema`] in its own file ([`super::KindRules::strategic_merge`]); the algorithm is the
//! server's (`versa-server`'s `patch/strategic.rs`). Every field not listed has no strategy:
//! maps merge, lists are replaced — including lists marked `+listType=map` or `+listType=set`
//! without the struct tag, which strategic merge patch ignores.
//!
//! Source of the shared part: `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`
//! (`ObjectMeta.finalizers`: merge; `ObjectMeta.ownerReferences`: merge on `uid`).

/// What strategic merge patch knows of one Go struct type: its fields that are structs with
/// fields of their own, and its fields with `patchStrategy: merge` (and their `patchMergeKey`).
#[derive(Debug)]
pub struct Schema {
    fields: &'static [(&'static str, Field)],
}

/// A field of a [`Schema`] that strategic merge patch treats specially.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// A struct-valued field whose own fields matter.
    Struct(&'static Schema),
    /// A list with `patchStrategy: merge`: its items merge on `key` (its `patchMergeKey`) when
    /// they are maps; a list of primitives has no key and is merged as a set.
    Merge { key: Option<&'static str>, item: &'static Schema },
}

/// The schema of a type with no special field (a leaf as far as merging goes).
pub static PLAIN: Schema = Schema::new(&[]);

impl Schema {
    pub const fn new(fields: &'static [(&'static str, Field)]) -> Schema {
        Schema { fields }
    }

    /// The special field `name`, if it is one.
    pub fn field(&self, name: &str) -> Option<Field> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }
}

/// `metav1.ObjectMeta`.
static OBJECT_META: Schema = Schema::new(&[
    ("finalizers", Field::Merge { key: None, item: &PLAIN }),
    ("ownerReferences", Field::Merge { key: Some("uid"), item: &PLAIN }),
]);

/// A kind's `metadata` field.
pub const METADATA: (&str, Field) = ("metadata", Field::Struct(&OBJECT_META));

/// A kind whose only special fields are its metadata's.
pub static METADATA_ONLY: Schema = Schema::new(&[METADATA]);
