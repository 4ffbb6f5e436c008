//! The type checker: cel-go's `checker` algorithm over our AST.
//!
//! Types are inferred bottom-up with cel-go's unification: overloads with type parameters
//! (`_==_(A, A)`, `_[_](list(A), int)`, ...) are instantiated with fresh type variables, the
//! argument types are unified with the parameters under a substitution map that survives only
//! if the overload matches, and every matching overload contributes its result type (several
//! different ones make the result `dyn`). `dyn` and the error type are assignable both ways, so
//! a `dyn` operand never fails to check and one mistake yields one error. Error texts are
//! cel-go's, word for word.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::ast::{Comprehension, Expr, ExprId, ExprKind, Literal, MAP_INSERT, MapEntry, SourceInfo, StructField, op};
use crate::error::CompileError;
use crate::types::{ObjectType, Type};

/// A variable visible to an expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    pub name: String,
    pub ty: Type,
}

/// The result of checking an expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The type of every node, by id (`Type::Dyn` for ids that are not nodes).
    pub types: Vec<Type>,
    /// The type of the whole expression.
    pub result_type: Type,
    /// Names of the identifiers the expression references (cel-go's reference map, by name).
    pub referenced_idents: Vec<String>,
}

/// Checks `expr` with the given variables in scope.
pub fn check(expr: &Expr, info: &SourceInfo, source: &str, vars: &[Variable]) -> Result<Checked, Vec<CompileError>> {
    check_with_structs(expr, info, source, vars, &[])
}

/// [`check`] with message types that struct literals may construct (`JSONPatch{op: "add"}` in
/// Kubernetes' MutatingAdmissionPolicy environment), by their name. A struct literal of
/// another type is cel-go's `undeclared reference` error, as without any.
pub fn check_with_structs(
    expr: &Expr,
    info: &SourceInfo,
    source: &str,
    vars: &[Variable],
    structs: &[Arc<ObjectType>],
) -> Result<Checked, Vec<CompileError>> {
    check_in(expr, info, source, vars, structs, false)
}

/// The name of the root of Kubernetes' dynamic object types (`Object`, `Object.spec`, ...).
pub const DYNAMIC_OBJECT: &str = "Object";

/// Whether `name` is one of Kubernetes' dynamic object types.
pub fn is_dynamic_object(name: &str) -> bool {
    name == DYNAMIC_OBJECT || name.strip_prefix(DYNAMIC_OBJECT).is_some_and(|r| r.starts_with('.'))
}

/// [`check_with_structs`], and with `dynamic_objects` Kubernetes' dynamic object types of
/// MutatingAdmissionPolicy's ApplyConfiguration: `Object{...}`, `Object.spec{...}` and any
/// other `Object.<path>` may be constructed with any fields, each `dyn`.
pub fn check_in(
    expr: &Expr,
    info: &SourceInfo,
    source: &str,
    vars: &[Variable],
    structs: &[Arc<ObjectType>],
    dynamic_objects: bool,
) -> Result<Checked, Vec<CompileError>> {
    let mut c = Checker {
        info,
        source,
        globals: vars,
        structs,
        dynamic_objects,
        scopes: Vec::new(),
        types: vec![Type::Dyn; info.id_count()],
        mappings: HashMap::new(),
        fresh: 0,
        errors: Vec::new(),
        referenced: Vec::new(),
    };
    c.check(expr);
    if !c.errors.is_empty() {
        return Err(c.errors);
    }
    let types: Vec<Type> = c.types.iter().map(|t| c.substitute(t, true)).collect();
    let result_type = types.get(expr.id as usize).cloned().unwrap_or(Type::Dyn);
    Ok(Checked { types, result_type, referenced_idents: c.referenced })
}

struct Checker<'a> {
    info: &'a SourceInfo,
    source: &'a str,
    globals: &'a [Variable],
    structs: &'a [Arc<ObjectType>],
    dynamic_objects: bool,
    scopes: Vec<(String, Type)>,
    types: Vec<Type>,
    mappings: HashMap<String, Type>,
    fresh: u32,
    errors: Vec<CompileError>,
    referenced: Vec<String>,
}

impl Checker<'_> {
    /// Whether the environment has the library of namespace `q`: Kubernetes adds the JSON patch
    /// library (`jsonpatch.escapeKey`) only where it declares the `JSONPatch` type — a
    /// MutatingAdmissionPolicy's expressions —, never to CRD rules.
    fn has_library_of(&self, q: &str) -> bool {
        q != "jsonpatch" || self.structs.iter().any(|s| s.name == "JSONPatch")
    }
}

/// Type names usable as values (`type(x) == string`).
fn type_ident(name: &str) -> Option<Type> {
    let t = match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "dyn" => Type::Dyn,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "type" => Type::type_of(Type::Dyn),
        "optional_type" => Type::optional(Type::Dyn),
        "google.protobuf.Timestamp" => Type::Timestamp,
        "google.protobuf.Duration" => Type::Duration,
        other => Type::Opaque(crate::ext::type_named(other)?),
    };
    Some(Type::type_of(t))
}

/// `a.b.c` as a qualified name, when the expression is only identifiers and selections.
fn qualified_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Ident(n) => Some(n.trim_start_matches('.').to_owned()),
        ExprKind::Select { operand, field, test_only: false } => {
            qualified_name(operand).map(|q| format!("{q}.{field}"))
        }
        _ => None,
    }
}

impl Checker<'_> {
    fn error(&mut self, id: ExprId, msg: String) {
        let loc = self.info.location(self.source, id);
        self.errors.push(CompileError::new(loc, msg));
    }

    fn set_type(&mut self, id: ExprId, t: Type) {
        let i = id as usize;
        if self.types.len() <= i {
            self.types.resize(i + 1, Type::Dyn);
        }
        self.types[i] = t;
    }

    fn get_type(&self, id: ExprId) -> Type {
        self.types.get(id as usize).cloned().unwrap_or(Type::Dyn)
    }

    fn new_type_var(&mut self) -> Type {
        let t = Type::Param(format!("_var{}", self.fresh));
        self.fresh += 1;
        t
    }

    fn lookup_var(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        if let Some(v) = self.globals.iter().find(|v| v.name == name) {
            return Some(v.ty.clone());
        }
        type_ident(name)
    }

    fn check(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Literal(l) => self.check_literal(e, l),
            ExprKind::Ident(name) => self.check_ident(e, name),
            ExprKind::Select { operand, field, test_only } => self.check_select(e, operand, field, *test_only),
            ExprKind::Call { function, target, args } => self.check_call(e, function, target.as_deref(), args),
            ExprKind::List { elements, optional_indices } => self.check_list(e, elements, optional_indices),
            ExprKind::Map { entries } => self.check_map(e, entries),
            ExprKind::Struct { type_name, fields } => self.check_struct(e, type_name, fields),
            ExprKind::Comprehension(c) => self.check_comprehension(e, c),
        }
    }

    #[inline(never)]
    fn check_literal(&mut self, e: &Expr, l: &Literal) {
        let t = match l {
            Literal::Null => Type::Null,
            Literal::Bool(_) => Type::Bool,
            Literal::Int(_) => Type::Int,
            Literal::Uint(_) => Type::Uint,
            Literal::Double(_) => Type::Double,
            Literal::String(_) => Type::String,
            Literal::Bytes(_) => Type::Bytes,
        };
        self.set_type(e.id, t);
    }

    #[inline(never)]
    fn check_ident(&mut self, e: &Expr, name: &str) {
        let bare = name.trim_start_matches('.');
        match self.lookup_var(bare) {
            Some(t) => {
                self.referenced.push(bare.to_owned());
                self.set_type(e.id, t);
            }
            None => {
                self.error(e.id, format!("undeclared reference to '{bare}' (in container '')"));
                self.set_type(e.id, Type::Error);
            }
        }
    }

    #[inline(never)]
    fn check_select(&mut self, e: &Expr, operand: &Expr, field: &str, test_only: bool) {
        // A qualified name may be a variable of its own (`authorizer.requestResource`): cel-go
        // resolves the longest declared name first.
        if !test_only
            && let Some(q) = qualified_name(e)
            && q.contains('.')
            && let Some(v) = self.globals.iter().find(|v| v.name == q)
        {
            let t = v.ty.clone();
            self.referenced.push(q);
            self.set_type(e.id, t);
            return;
        }
        // A qualified name may denote a type (`google.protobuf.Timestamp`).
        if !test_only
            && let Some(q) = qualified_name(e)
            && let Some(t) = type_ident(&q)
            && qualified_name(operand).is_some_and(|o| self.lookup_var(&o).is_none())
        {
            self.set_type(e.id, t);
            return;
        }
        let t = self.check_select_field(e.id, operand, field, false);
        self.set_type(e.id, if test_only { Type::Bool } else { t });
    }

    #[inline(never)]
    fn check_list(&mut self, e: &Expr, elements: &[Expr], optional_indices: &[usize]) {
        let mut elem_type: Option<Type> = None;
        for (i, el) in elements.iter().enumerate() {
            self.check(el);
            let mut t = self.get_type(el.id);
            if optional_indices.contains(&i) {
                t = self.unwrap_optional_element(el.id, t);
            }
            elem_type = Some(self.join_types(elem_type, t));
        }
        let elem = match elem_type {
            Some(t) => t,
            None => self.new_type_var(),
        };
        self.set_type(e.id, Type::list(elem));
    }

    #[inline(never)]
    fn check_map(&mut self, e: &Expr, entries: &[MapEntry]) {
        let mut key_type: Option<Type> = None;
        let mut value_type: Option<Type> = None;
        for entry in entries {
            self.check(&entry.key);
            let kt = self.get_type(entry.key.id);
            key_type = Some(self.join_types(key_type, kt));
            self.check(&entry.value);
            let mut vt = self.get_type(entry.value.id);
            if entry.optional {
                vt = self.unwrap_optional_element(entry.value.id, vt);
            }
            value_type = Some(self.join_types(value_type, vt));
        }
        let k = match key_type {
            Some(t) => t,
            None => self.new_type_var(),
        };
        let v = match value_type {
            Some(t) => t,
            None => self.new_type_var(),
        };
        self.set_type(e.id, Type::map(k, v));
    }

    #[inline(never)]
    fn check_struct(&mut self, e: &Expr, type_name: &str, fields: &[StructField]) {
        let name = type_name.trim_start_matches('.');
        // No message types are declared for Kubernetes rules; admission declares a few.
        if self.dynamic_objects && is_dynamic_object(name) {
            for f in fields {
                self.check(&f.value);
            }
            let ty = Arc::new(ObjectType { name: name.to_owned(), fields: Default::default() });
            self.set_type(e.id, Type::Object(ty));
            return;
        }
        let Some(ty) = self.structs.iter().find(|t| t.name == name).cloned() else {
            self.error(e.id, format!("undeclared reference to '{name}' (in container '')"));
            self.set_type(e.id, Type::Error);
            return;
        };
        for f in fields {
            self.check(&f.value);
            let Some(decl) = ty.fields.get(&f.field) else {
                self.error(f.id, format!("undefined field '{}'", f.field));
                continue;
            };
            let mut provided = self.get_type(f.value.id);
            if f.optional {
                provided = self.unwrap_optional_element(f.value.id, provided);
            }
            let expected = decl.ty.cel_type();
            let mut m = self.mappings.clone();
            if is_assignable(&mut m, &provided, &expected) {
                self.mappings = m;
            } else {
                let provided = self.substitute(&provided, true);
                self.error(
                    f.id,
                    format!("expected type of field '{}' is '{expected}' but provided type is '{provided}'", f.field),
                );
            }
        }
        self.set_type(e.id, Type::Object(ty));
    }

    #[inline(never)]
    fn check_comprehension(&mut self, e: &Expr, c: &Comprehension) {
        self.check(&c.iter_range);
        self.check(&c.accu_init);
        let accu_type = self.get_type(c.accu_init.id);
        let range_type = self.substitute(&self.get_type(c.iter_range.id), false);
        // One variable: the element of a list, the key of a map. Two: the index (int) and the
        // element of a list, the key and the value of a map.
        let two = c.iter_var2.is_some();
        let (var_type, var2_type) = match &range_type {
            Type::List(el) if two => (Type::Int, (**el).clone()),
            Type::List(el) => ((**el).clone(), Type::Dyn),
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            Type::Dyn | Type::Error | Type::Param(_) => {
                let mut m = self.mappings.clone();
                if is_assignable(&mut m, &Type::Dyn, &range_type) {
                    self.mappings = m;
                }
                (Type::Dyn, Type::Dyn)
            }
            other => {
                self.error(
                    c.iter_range.id,
                    format!(
                        "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                    ),
                );
                (Type::Error, Type::Error)
            }
        };
        let scope_base = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), accu_type.clone()));
        self.scopes.push((c.iter_var.clone(), var_type));
        if let Some(var2) = &c.iter_var2 {
            self.scopes.push((var2.clone(), var2_type));
        }
        self.check(&c.loop_condition);
        self.assert_type(&c.loop_condition, &Type::Bool);
        self.check(&c.loop_step);
        self.assert_type(&c.loop_step, &accu_type);
        self.scopes.truncate(scope_base + 1);
        self.check(&c.result);
        self.scopes.pop();
        let rt = self.substitute(&self.get_type(c.result.id), false);
        self.set_type(e.id, rt);
    }

    fn unwrap_optional_element(&mut self, id: ExprId, t: Type) -> Type {
        match t {
            Type::Optional(inner) => *inner,
            Type::Dyn => Type::Dyn,
            other => {
                self.error(id, format!("expected type '{}' but found '{other}'", Type::optional(other.clone())));
                other
            }
        }
    }

    /// cel-go's `joinTypes` with dynamic aggregate literals: mixed element types become `dyn`
    /// (the homogeneous-literal validator reports them separately).
    fn join_types(&mut self, previous: Option<Type>, current: Type) -> Type {
        match previous {
            None => current,
            Some(prev) => {
                let mut m = self.mappings.clone();
                if is_assignable(&mut m, &prev, &current) {
                    self.mappings = m;
                    most_general(&prev, &current)
                } else {
                    Type::Dyn
                }
            }
        }
    }

    fn assert_type(&mut self, e: &Expr, expected: &Type) {
        let actual = self.get_type(e.id);
        let mut m = self.mappings.clone();
        if is_assignable(&mut m, expected, &actual) {
            self.mappings = m;
        } else {
            self.error(e.id, format!("expected type '{expected}' but found '{actual}'"));
        }
    }

    fn check_select_field(&mut self, id: ExprId, operand: &Expr, field: &str, optional: bool) -> Type {
        self.check(operand);
        let operand_type = self.substitute(&self.get_type(operand.id), false);
        let (target, was_optional) = match operand_type {
            Type::Optional(inner) => (*inner, true),
            t => (t, false),
        };
        let result = match &target {
            Type::Map(_, v) => (**v).clone(),
            Type::Object(o) => match o.fields.get(field) {
                Some(f) => f.ty.cel_type(),
                // Dynamic objects have every field, of type `dyn`.
                None if is_dynamic_object(&o.name) => Type::Dyn,
                None => {
                    self.error(id, format!("undefined field '{field}'"));
                    Type::Error
                }
            },
            Type::Param(_) => {
                let mut m = self.mappings.clone();
                if is_assignable(&mut m, &Type::Dyn, &target) {
                    self.mappings = m;
                }
                Type::Dyn
            }
            Type::Dyn | Type::Error => Type::Dyn,
            other => {
                self.error(id, format!("type '{other}' does not support field selection"));
                Type::Dyn
            }
        };
        if was_optional || optional { Type::optional(result) } else { result }
    }

    #[inline(never)]
    fn check_call(&mut self, e: &Expr, function: &str, target: Option<&Expr>, args: &[Expr]) {
        if function == op::OPT_SELECT && target.is_none() && args.len() == 2 {
            let field = match &args[1].kind {
                ExprKind::Literal(Literal::String(s)) => s.clone(),
                _ => {
                    self.error(args[1].id, "unsupported optional field selection".into());
                    self.set_type(e.id, Type::Error);
                    return;
                }
            };
            let t = self.check_select_field(e.id, &args[0], &field, true);
            let t = self.substitute(&t, false);
            self.set_type(e.id, t);
            return;
        }
        for a in args {
            self.check(a);
        }
        let table = overloads();
        let Some(target) = target else {
            match table.get(function) {
                Some(ovs) => self.resolve(e, function, ovs, None, args),
                None => {
                    self.error(e.id, format!("undeclared reference to '{function}' (in container '')"));
                    self.set_type(e.id, Type::Error);
                }
            }
            return;
        };
        if let Some(q) = qualified_name(target) {
            let name = format!("{q}.{function}");
            if let Some(ovs) = table.get(name.as_str()).filter(|_| self.has_library_of(&q)) {
                self.resolve(e, &name, ovs, None, args);
                return;
            }
        }
        self.check(target);
        match table.get(function) {
            Some(ovs) => self.resolve(e, function, ovs, Some(target), args),
            None => {
                self.set_type(e.id, Type::Error);
                self.error(e.id, format!("undeclared reference to '{function}' (in container '')"));
            }
        }
    }

    fn resolve(&mut self, e: &Expr, function: &str, ovs: &[Overload], target: Option<&Expr>, args: &[Expr]) {
        let mut arg_types: Vec<Type> = Vec::with_capacity(args.len() + 1);
        if let Some(t) = target {
            arg_types.push(self.get_type(t.id));
        }
        arg_types.extend(args.iter().map(|a| self.get_type(a.id)));
        let mut result: Option<Type> = None;
        for ov in ovs {
            if ov.member != target.is_some() || ov.params.len() != arg_types.len() {
                continue;
            }
            // Instantiate the overload's type parameters with fresh variables.
            let mut inst: HashMap<String, Type> = HashMap::new();
            for p in &ov.type_params {
                let v = self.new_type_var();
                inst.insert((*p).to_owned(), v);
            }
            let params: Vec<Type> = ov.params.iter().map(|p| substitute_params(p, &inst)).collect();
            let ret = substitute_params(&ov.result, &inst);
            let mut m = self.mappings.clone();
            if arg_types.iter().zip(&params).all(|(a, p)| is_assignable(&mut m, a, p)) {
                self.mappings = m;
                let rt = self.substitute(&ret, false);
                result = Some(match result {
                    None => rt,
                    Some(prev) if prev == Type::Dyn || prev.is_exact(&rt) => prev,
                    Some(_) => Type::Dyn,
                });
            }
        }
        match result {
            Some(t) => self.set_type(e.id, t),
            None => {
                let shown: Vec<String> = arg_types.iter().map(|t| self.substitute(t, true).to_string()).collect();
                let signature = if target.is_some() {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.error(e.id, format!("found no matching overload for '{function}' applied to '{signature}'"));
                self.set_type(e.id, Type::Error);
            }
        }
    }

    fn substitute(&self, t: &Type, params_to_dyn: bool) -> Type {
        substitute(&self.mappings, t, params_to_dyn, 0)
    }
}

fn substitute_params(t: &Type, inst: &HashMap<String, Type>) -> Type {
    match t {
        Type::Param(p) => inst.get(p).cloned().unwrap_or_else(|| t.clone()),
        Type::List(e) => Type::list(substitute_params(e, inst)),
        Type::Map(k, v) => Type::map(substitute_params(k, inst), substitute_params(v, inst)),
        Type::Optional(e) => Type::optional(substitute_params(e, inst)),
        Type::TypeOf(e) => Type::type_of(substitute_params(e, inst)),
        other => other.clone(),
    }
}

/// Replaces bound type variables by their bindings, transitively. `depth` guards against
/// cycles, which the occurs check should already prevent.
fn substitute(m: &HashMap<String, Type>, t: &Type, params_to_dyn: bool, depth: u32) -> Type {
    if depth > 64 {
        return Type::Dyn;
    }
    match t {
        Type::Param(p) => match m.get(p) {
            Some(b) => substitute(m, b, params_to_dyn, depth + 1),
            None if params_to_dyn => Type::Dyn,
            None => t.clone(),
        },
        Type::List(e) => Type::list(substitute(m, e, params_to_dyn, depth + 1)),
        Type::Map(k, v) => {
            Type::map(substitute(m, k, params_to_dyn, depth + 1), substitute(m, v, params_to_dyn, depth + 1))
        }
        Type::Optional(e) => Type::optional(substitute(m, e, params_to_dyn, depth + 1)),
        Type::TypeOf(e) => Type::type_of(substitute(m, e, params_to_dyn, depth + 1)),
        other => other.clone(),
    }
}

fn is_dyn_or_error(t: &Type) -> bool {
    matches!(t, Type::Dyn | Type::Error)
}

/// cel-go's `isEqualOrLessSpecific`.
fn is_equal_or_less_specific(a: &Type, b: &Type) -> bool {
    if matches!(a, Type::Dyn | Type::Param(_)) {
        return true;
    }
    if matches!(b, Type::Dyn | Type::Param(_)) {
        return false;
    }
    match (a, b) {
        (Type::List(x), Type::List(y))
        | (Type::Optional(x), Type::Optional(y))
        | (Type::TypeOf(x), Type::TypeOf(y)) => is_equal_or_less_specific(x, y),
        (Type::Map(ak, av), Type::Map(bk, bv)) => {
            is_equal_or_less_specific(ak, bk) && is_equal_or_less_specific(av, bv)
        }
        _ => a.is_exact(b),
    }
}

fn most_general(a: &Type, b: &Type) -> Type {
    if is_equal_or_less_specific(a, b) { a.clone() } else { b.clone() }
}

/// Whether type variable `p` does not occur in `within` (the occurs check).
fn not_referenced_in(m: &HashMap<String, Type>, p: &str, within: &Type) -> bool {
    match within {
        Type::Param(q) if q == p => false,
        Type::Param(q) => m.get(q).is_none_or(|sub| not_referenced_in(m, p, sub)),
        Type::List(e) | Type::Optional(e) | Type::TypeOf(e) => not_referenced_in(m, p, e),
        Type::Map(k, v) => not_referenced_in(m, p, k) && not_referenced_in(m, p, v),
        _ => true,
    }
}

/// cel-go's `isValidTypeSubstitution`: returns (valid, had a substitution).
fn valid_substitution(m: &mut HashMap<String, Type>, t1: &Type, p: &str) -> (bool, bool) {
    if let Type::Param(q) = t1
        && q == p
    {
        return (true, true);
    }
    if let Some(sub) = m.get(p).cloned() {
        if t1.is_exact(&sub) && !matches!(t1, Type::Param(_)) {
            return (true, true);
        }
        if is_assignable(m, t1, &sub) {
            let general = most_general(t1, &sub);
            if not_referenced_in(m, p, &general) {
                m.insert(p.to_owned(), general);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, p, t1) {
        m.insert(p.to_owned(), t1.clone());
        return (true, false);
    }
    (false, false)
}

/// cel-go's `internalIsAssignable(m, t1, t2)`: can a value of type `t1` be used where `t2`
/// is expected (and vice versa for the type-variable bookkeeping). Updates `m`.
pub(crate) fn is_assignable(m: &mut HashMap<String, Type>, t1: &Type, t2: &Type) -> bool {
    if let Type::Param(p) = t2 {
        let (valid, had_sub) = valid_substitution(m, t1, p);
        if valid {
            return true;
        }
        if had_sub {
            return false;
        }
    }
    if let Type::Param(p) = t1 {
        return valid_substitution(m, t2, p).0;
    }
    if is_dyn_or_error(t1) || is_dyn_or_error(t2) {
        return true;
    }
    if matches!(t1, Type::Null) {
        return is_legacy_nullable(t2);
    }
    if matches!(t2, Type::Null) {
        return is_legacy_nullable(t1);
    }
    match (t1, t2) {
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => is_assignable(m, a, b),
        (Type::Map(ak, av), Type::Map(bk, bv)) => is_assignable(m, ak, bk) && is_assignable(m, av, bv),
        (Type::Object(a), Type::Object(b)) => a.name == b.name,
        (Type::Opaque(a), Type::Opaque(b)) => a == b,
        _ => {
            matches!(
                t1,
                Type::Bool
                    | Type::Int
                    | Type::Uint
                    | Type::Double
                    | Type::String
                    | Type::Bytes
                    | Type::Timestamp
                    | Type::Duration
            ) && std::mem::discriminant(t1) == std::mem::discriminant(t2)
        }
    }
}

fn is_legacy_nullable(t: &Type) -> bool {
    match t {
        Type::Optional(_) | Type::Object(_) | Type::Timestamp | Type::Duration => true,
        // The Kubernetes object types (URL, Quantity, ...) are message-like; IP and CIDR are not.
        Type::Opaque(name) => name.starts_with("kubernetes."),
        _ => false,
    }
}

/// One overload of a function.
#[derive(Clone, Debug)]
pub(crate) struct Overload {
    /// A member overload is called as `target.f(args)`; `params[0]` is the target.
    pub member: bool,
    pub params: Vec<Type>,
    pub result: Type,
    pub type_params: Vec<&'static str>,
}

/// The standard-library declarations the checker knows, by function name.
pub(crate) fn overloads() -> &'static HashMap<&'static str, Vec<Overload>> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<Overload>>> = OnceLock::new();
    TABLE.get_or_init(build_overloads)
}

fn build_overloads() -> HashMap<&'static str, Vec<Overload>> {
    use Type::{Bool, Bytes, Double, Duration, Int, String as Str, Timestamp, Uint};
    let a = || Type::param("A");
    let b = || Type::param("B");
    let mut t: HashMap<&'static str, Vec<Overload>> = HashMap::new();
    let mut add = |name: &'static str, member: bool, params: Vec<Type>, result: Type| {
        let mut type_params = Vec::new();
        for p in params.iter().chain(std::iter::once(&result)) {
            collect_params(p, &mut type_params);
        }
        t.entry(name).or_default().push(Overload { member, params, result, type_params });
    };

    add(op::LOGICAL_NOT, false, vec![Bool], Bool);
    add(op::NOT_STRICTLY_FALSE, false, vec![Bool], Bool);
    add(op::LOGICAL_AND, false, vec![Bool, Bool], Bool);
    add(op::LOGICAL_OR, false, vec![Bool, Bool], Bool);
    add(op::CONDITIONAL, false, vec![Bool, a(), a()], a());
    add(op::NEGATE, false, vec![Int], Int);
    add(op::NEGATE, false, vec![Double], Double);
    add(op::EQUALS, false, vec![a(), a()], Bool);
    add(op::NOT_EQUALS, false, vec![a(), a()], Bool);
    for o in [op::LESS, op::LESS_EQUALS, op::GREATER, op::GREATER_EQUALS] {
        for ty in [Bool, Int, Uint, Double, Str, Bytes, Timestamp, Duration] {
            add(o, false, vec![ty.clone(), ty], Bool);
        }
        // Cross-type numeric comparisons (enabled in Kubernetes since 1.28).
        for (x, y) in [(Int, Uint), (Int, Double), (Uint, Int), (Uint, Double), (Double, Int), (Double, Uint)] {
            add(o, false, vec![x, y], Bool);
        }
    }
    for ty in [Int, Uint, Double, Str, Bytes] {
        add(op::ADD, false, vec![ty.clone(), ty.clone()], ty);
    }
    add(op::ADD, false, vec![Type::list(a()), Type::list(a())], Type::list(a()));
    add(op::ADD, false, vec![Timestamp, Duration], Timestamp);
    add(op::ADD, false, vec![Duration, Timestamp], Timestamp);
    add(op::ADD, false, vec![Duration, Duration], Duration);
    for ty in [Int, Uint, Double] {
        add(op::SUBTRACT, false, vec![ty.clone(), ty.clone()], ty.clone());
        add(op::MULTIPLY, false, vec![ty.clone(), ty.clone()], ty.clone());
        add(op::DIVIDE, false, vec![ty.clone(), ty.clone()], ty);
    }
    add(op::SUBTRACT, false, vec![Timestamp, Timestamp], Duration);
    add(op::SUBTRACT, false, vec![Timestamp, Duration], Timestamp);
    add(op::SUBTRACT, false, vec![Duration, Duration], Duration);
    add(op::MODULO, false, vec![Int, Int], Int);
    add(op::MODULO, false, vec![Uint, Uint], Uint);
    add(op::INDEX, false, vec![Type::list(a()), Int], a());
    add(op::INDEX, false, vec![Type::map(a(), b()), a()], b());
    add(op::INDEX, false, vec![Type::optional(Type::list(a())), Int], Type::optional(a()));
    add(op::INDEX, false, vec![Type::optional(Type::map(a(), b())), a()], Type::optional(b()));
    add(op::OPT_INDEX, false, vec![Type::list(a()), Int], Type::optional(a()));
    add(op::OPT_INDEX, false, vec![Type::map(a(), b()), a()], Type::optional(b()));
    add(op::OPT_INDEX, false, vec![Type::optional(Type::list(a())), Int], Type::optional(a()));
    add(op::OPT_INDEX, false, vec![Type::optional(Type::map(a(), b())), a()], Type::optional(b()));
    add(op::IN, false, vec![a(), Type::list(a())], Bool);
    add(op::IN, false, vec![a(), Type::map(a(), b())], Bool);
    for member in [false, true] {
        add("size", member, vec![Str], Int);
        add("size", member, vec![Bytes], Int);
        add("size", member, vec![Type::list(a())], Int);
        add("size", member, vec![Type::map(a(), b())], Int);
    }
    for f in ["contains", "startsWith", "endsWith"] {
        add(f, true, vec![Str, Str], Bool);
    }
    add("matches", false, vec![Str, Str], Bool);
    add("matches", true, vec![Str, Str], Bool);
    // Conversions.
    for from in [Int, Uint, Double, Str, Timestamp] {
        add("int", false, vec![from], Int);
    }
    for from in [Uint, Int, Double, Str] {
        add("uint", false, vec![from], Uint);
    }
    for from in [Double, Int, Uint, Str] {
        add("double", false, vec![from], Double);
    }
    for from in [Str, Int, Uint, Double, Bool, Bytes, Timestamp, Duration] {
        add("string", false, vec![from], Str);
    }
    add("bytes", false, vec![Bytes], Bytes);
    add("bytes", false, vec![Str], Bytes);
    add("bool", false, vec![Bool], Bool);
    add("bool", false, vec![Str], Bool);
    add("timestamp", false, vec![Timestamp], Timestamp);
    add("timestamp", false, vec![Str], Timestamp);
    add("timestamp", false, vec![Int], Timestamp);
    add("duration", false, vec![Duration], Duration);
    add("duration", false, vec![Str], Duration);
    add("dyn", false, vec![a()], Type::Dyn);
    add("type", false, vec![a()], Type::type_of(a()));
    // Timestamp and duration accessors; timestamps take an optional time zone.
    for f in [
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
    ] {
        add(f, true, vec![Timestamp], Int);
        add(f, true, vec![Timestamp, Str], Int);
    }
    for f in ["getHours", "getMinutes", "getSeconds", "getMilliseconds"] {
        add(f, true, vec![Duration], Int);
    }
    // Optional values (Kubernetes enables the optional library since 1.28).
    add("optional.of", false, vec![a()], Type::optional(a()));
    add("optional.ofNonZeroValue", false, vec![a()], Type::optional(a()));
    add("optional.none", false, vec![], Type::optional(a()));
    add("value", true, vec![Type::optional(a())], a());
    add("hasValue", true, vec![Type::optional(a())], Bool);
    add("or", true, vec![Type::optional(a()), Type::optional(a())], Type::optional(a()));
    add("orValue", true, vec![Type::optional(a()), a()], a());
    // Version 2 of cel-go's optional library (Kubernetes 1.36): drop the absent values of a list.
    add("optional.unwrap", false, vec![Type::list(Type::optional(a()))], Type::list(a()));
    add("unwrapOpt", true, vec![Type::list(Type::optional(a()))], Type::list(a()));
    // The step function of the two-variable `transformMap` and `transformMapEntry` macros.
    add(MAP_INSERT, false, vec![Type::map(a(), b()), a(), b()], Type::map(a(), b()));
    add(MAP_INSERT, false, vec![Type::map(a(), b()), Type::map(a(), b())], Type::map(a(), b()));
    crate::ext::declare(&mut add);
    t
}

fn collect_params(t: &Type, out: &mut Vec<&'static str>) {
    match t {
        Type::Param(p) => {
            let name: &'static str = if p == "A" { "A" } else { "B" };
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Type::List(e) | Type::Optional(e) | Type::TypeOf(e) => collect_params(e, out),
        Type::Map(k, v) => {
            collect_params(k, out);
            collect_params(v, out);
        }
        _ => {}
    }
}
