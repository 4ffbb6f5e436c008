//! The request's objects at the version a webhook or policy asked for (kube's
//! `VersionedAttributes`): the request's own objects when the matched kind is the request's,
//! else both objects converted through [`Resources::convert`](crate::seams::Resources::convert),
//! once per kind per request (until a mutation changes the object).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::attributes::{Attributes, GroupVersionKind};
use crate::error::AdmissionError;
use crate::seams::Host;

/// The objects at another version.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Converted {
    pub object: Option<Value>,
    pub old_object: Option<Value>,
}

/// Converted objects by kind, for one request.
#[derive(Debug, Default)]
pub(crate) struct Versions {
    by_kind: HashMap<GroupVersionKind, Arc<Converted>>,
}

impl Versions {
    /// The objects at `kind`'s version: `None` when that is the request's own version.
    pub async fn get(
        &mut self,
        attrs: &Attributes,
        kind: &GroupVersionKind,
        host: &Host<'_>,
    ) -> Result<Option<Arc<Converted>>, AdmissionError> {
        if *kind == attrs.kind {
            return Ok(None);
        }
        if let Some(done) = self.by_kind.get(kind) {
            return Ok(Some(done.clone()));
        }
        let convert = |o: &Option<Value>| {
            let o = o.clone();
            async move {
                match o {
                    Some(o) => host.resources.convert(&o, kind).await.map(Some).map_err(AdmissionError::from),
                    None => Ok(None),
                }
            }
        };
        let converted = Arc::new(Converted {
            object: convert(&attrs.object).await?,
            old_object: convert(&attrs.old_object).await?,
        });
        self.by_kind.insert(kind.clone(), converted.clone());
        Ok(Some(converted))
    }

    /// Forgets the conversions of the object (it changed).
    pub fn invalidate(&mut self) {
        self.by_kind.clear();
    }
}

/// The object and old object to show at a kind: converted ones, or the request's.
pub(crate) fn objects<'a>(
    attrs: &'a Attributes,
    converted: &'a Option<Arc<Converted>>,
) -> (Option<&'a Value>, Option<&'a Value>) {
    match converted {
        Some(c) => (c.object.as_ref(), c.old_object.as_ref()),
        None => (attrs.object.as_ref(), attrs.old_object.as_ref()),
    }
}
