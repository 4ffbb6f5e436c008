//! Apply conflicts and the error kube-apiserver answers them with.
//!
//! A conflict is a field another manager owns that an apply would change. kube-apiserver turns
//! them into a 409 `Status` whose message is `Apply failed with 1 conflict: conflict with
//! "manager" using group/version: .spec.replicas` (or, for several, one `conflicts with ...:`
//! paragraph per manager in sorted order, one `- path` line per field), and whose causes carry
//! one `FieldManagerConflict` per field. Managers are printed from their identifiers: the name
//! quoted, `with subresource "status"` when there is one, and `using <apiVersion>` for update
//! managers (appliers are not tied to a version). Hand-written because clients (kubectl)
//! show and parse these texts.

use std::fmt;

use crate::managed::ManagerId;
use crate::path::FieldPath;
use crate::value::write_go_quoted;

/// One field another manager owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager that owns the field.
    pub manager: ManagerId,
    pub path: FieldPath,
}

/// One cause of the conflict `Status` (`type: FieldManagerConflict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictCause {
    /// `conflict with "manager" ...`.
    pub message: String,
    /// The field path, `.spec.replicas`.
    pub field: String,
}

/// All conflicts of one apply, in manager order, each manager's fields depth first.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// The `Status.details.causes` kube-apiserver sends with the 409.
    pub fn causes(&self) -> Vec<ConflictCause> {
        self.0
            .iter()
            .map(|c| ConflictCause {
                message: format!("conflict with {}", c.manager.printed()),
                field: c.path.to_string(),
            })
            .collect()
    }
}

/// kube-apiserver's message for the 409.
impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [one] = self.0.as_slice() {
            return write!(f, "Apply failed with 1 conflict: conflict with {}: {}", one.manager.printed(), one.path);
        }
        let mut managers: Vec<&ManagerId> = self.0.iter().map(|c| &c.manager).collect();
        managers.sort_by_key(|m| m.identifier());
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {}:", m.printed()));
            for c in self.0.iter().filter(|c| &c.manager == m) {
                lines.push(format!("- {}", c.path));
            }
        }
        write!(f, "Apply failed with {} conflicts: {}", self.0.len(), lines.join("\n"))
    }
}

impl ManagerId {
    /// The manager as conflict messages print it.
    pub fn printed(&self) -> String {
        let mut s = String::new();
        write_go_quoted(&self.manager, &mut s);
        if !self.subresource.is_empty() {
            s.push_str(" with subresource ");
            write_go_quoted(&self.subresource, &mut s);
        }
        if let Some(v) = &self.update_api_version {
            s.push_str(" using ");
            s.push_str(v);
        }
        s
    }
}
