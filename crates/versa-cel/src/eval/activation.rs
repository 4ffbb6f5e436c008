//! The variables of one evaluation ([`Activation`]): `self` and `oldSelf` in slots of their
//! own, the others by name.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::runtime::EvalError;
use crate::types::DeclType;
use crate::value::Value;
use crate::{OLD_SELF_VAR, SELF_VAR};

/// The variables of one evaluation. A rule's `self` and `oldSelf` have their own slots, so
/// that binding them allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Activation<'a> {
    pub(crate) self_value: Option<Value<'a>>,
    pub(crate) old_self: Option<Value<'a>>,
    others: Vec<(std::borrow::Cow<'static, str>, Value<'a>)>,
    /// Some variable has a dotted name (`authorizer.requestResource`).
    pub(super) dotted: bool,
}

impl<'a> Activation<'a> {
    pub fn new() -> Activation<'a> {
        Activation::default()
    }

    /// Binds a rule's variables: `self`, and `oldSelf` when there is an old value — as
    /// `optional_type(T)` when the rule has `optionalOldSelf` (none for a create).
    pub fn for_rule(
        self_json: &'a Json,
        old_self: Option<&'a Json>,
        decl: &'a DeclType,
        optional_old_self: bool,
    ) -> Result<Activation<'a>, EvalError> {
        let old = match old_self {
            Some(old) => Some(Value::from_json(old, decl)?),
            None => None,
        };
        Ok(Activation::for_rule_values(Value::from_json(self_json, decl)?, old, optional_old_self))
    }

    /// [`Activation::for_rule`] with `self` and `oldSelf` already converted (a node's rules
    /// share them).
    pub fn for_rule_values(
        self_value: Value<'a>,
        old_self: Option<Value<'a>>,
        optional_old_self: bool,
    ) -> Activation<'a> {
        let old_self = match (old_self, optional_old_self) {
            (Some(old), false) => Some(old),
            (Some(old), true) => Some(Value::Optional(Some(Arc::new(old)))),
            (None, true) => Some(Value::Optional(None)),
            (None, false) => None,
        };
        Activation { self_value: Some(self_value), old_self, others: Vec::new(), dotted: false }
    }

    /// [`Activation::bind`] for a variable whose name is a constant (nothing is allocated for
    /// the name).
    pub fn bind_static(&mut self, name: &'static str, value: Value<'a>) {
        match name {
            SELF_VAR | OLD_SELF_VAR => self.bind(name, value),
            _ => match self.others.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => {
                    self.dotted |= name.contains('.');
                    self.others.push((name.into(), value));
                }
            },
        }
    }

    /// Binds (or rebinds) a variable.
    pub fn bind(&mut self, name: &str, value: Value<'a>) {
        match name {
            SELF_VAR => self.self_value = Some(value),
            OLD_SELF_VAR => self.old_self = Some(value),
            _ => match self.others.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = value,
                None => {
                    self.dotted |= name.contains('.');
                    self.others.push((name.to_owned().into(), value));
                }
            },
        }
    }

    pub(super) fn get(&self, name: &str) -> Option<&Value<'a>> {
        match name {
            SELF_VAR => self.self_value.as_ref(),
            OLD_SELF_VAR => self.old_self.as_ref(),
            _ => self.others.iter().find(|(n, _)| *n == name).map(|(_, v)| v),
        }
    }

    /// The names of the bound variables.
    pub(super) fn names(&self) -> Vec<&str> {
        let fixed = [(SELF_VAR, &self.self_value), (OLD_SELF_VAR, &self.old_self)];
        let fixed = fixed.into_iter().filter(|(_, v)| v.is_some()).map(|(n, _)| n);
        fixed.chain(self.others.iter().map(|(n, _)| &**n)).collect()
    }
}
