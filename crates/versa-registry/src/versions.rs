//! A resource's versions as structured merge reads them: server-side apply and `managedFields`
//! judge an entry written at another version on the objects converted there
//! (`versa_merge::Versions`), with the resource's own conversion — in process for
//! `None` and `CEL`; through the webhook for `Webhook`, called from inside the (synchronous)
//! merge on the serving runtime's worker, which `block_in_place` hands its other tasks away from
//! while the webhook answers. Nothing a webhook answers is kept. The conversions are the storage
//! boundary's converter's, and are observed like the boundary's.

use std::time::Instant;

use serde_json::Value;
use versa_merge::Versions;
use versa_schema::Structural;

use crate::resource::Resource;
use crate::storage::Observer;

/// [`Versions`] of one resource.
pub struct MergeVersions<'a> {
    res: &'a Resource,
    observer: &'a dyn Observer,
}

impl std::fmt::Debug for MergeVersions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeVersions").field("resource", &self.res.plural).finish()
    }
}

impl<'a> MergeVersions<'a> {
    pub fn new(res: &'a Resource, observer: &'a dyn Observer) -> MergeVersions<'a> {
        MergeVersions { res, observer }
    }

    /// Whether there is more than one version to judge entries at (and a converter to do it).
    pub fn offered(&self) -> bool {
        self.res.versions.len() > 1 && self.res.converter().is_ok()
    }

    /// `version` of `group/version`, for this resource's group.
    fn version<'v>(&self, api_version: &'v str) -> Option<&'v str> {
        match self.res.group.as_str() {
            "" => Some(api_version),
            group => api_version.strip_prefix(group)?.strip_prefix('/'),
        }
    }
}

impl Versions for MergeVersions<'_> {
    fn schema(&self, api_version: &str) -> Option<&Structural> {
        self.res.version(self.version(api_version)?)?.schema().map(|s| &**s)
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String> {
        let version =
            self.version(api_version).ok_or_else(|| format!("{api_version} is not a version of this resource"))?;
        let converter = self.res.converter().map_err(str::to_owned)?;
        let started = Instant::now();
        let converted = if converter.is_deterministic() {
            converter.convert_sync(obj.clone(), version).map_err(|e| e.to_string())
        } else {
            let handle = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
            if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
                return Err("a conversion webhook cannot be called from a single-threaded runtime".into());
            }
            let all = tokio::task::block_in_place(|| handle.block_on(converter.convert(vec![obj.clone()], version)));
            all.map_err(|e| e.to_string())
                .and_then(|mut all| all.pop().ok_or_else(|| "the conversion returned no object".into()))
        };
        let seconds = started.elapsed().as_secs_f64();
        self.observer.conversion(self.res.definition.name(), converter.strategy(), converted.is_ok(), seconds);
        converted
    }
}
