//! What reinvocation remembers between the two rounds of mutating admission, one record per
//! plugin (mutating webhooks, MutatingAdmissionPolicies): kube's `webhookReinvokeContext` and
//! `policyReinvokeContext`.

use std::collections::HashSet;

use serde_json::Value;

/// What reinvocation remembers between the rounds of one plugin (kube's
/// `webhookReinvokeContext`, also used for mutating policies): the invoked hooks that want to
/// be called again if something changes later, the ones to call again, and the object as the
/// plugin last left it.
#[derive(Debug, Default)]
pub(crate) struct Reinvocation {
    previously_invoked: HashSet<String>,
    to_reinvoke: HashSet<String>,
    last_output: Option<Option<Value>>,
}

impl Reinvocation {
    /// Everything invoked so far that asked for it is to be called again.
    pub fn require_reinvoking_previous(&mut self) {
        self.to_reinvoke.extend(self.previously_invoked.drain());
    }

    pub fn invoked(&mut self, key: String) {
        self.previously_invoked.insert(key);
    }

    pub fn should_reinvoke(&self, key: &str) -> bool {
        self.to_reinvoke.contains(key)
    }

    /// At the start of a reinvocation round: whether the object changed since the plugin last
    /// ran (then everything it invoked is called again).
    pub fn changed_since_last_output(&self, object: &Option<Value>) -> bool {
        self.last_output.as_ref().is_none_or(|last| last != object)
    }

    /// Remembers the object as the plugin leaves it — only when something invoked may be
    /// called again because of a later change (otherwise the comparison could not matter).
    pub fn set_last_output(&mut self, object: &Option<Value>) {
        self.last_output = if self.previously_invoked.is_empty() { None } else { Some(object.clone()) };
    }
}
