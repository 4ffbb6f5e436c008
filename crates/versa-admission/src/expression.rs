//! CEL in admission: the environment kube-apiserver compiles matchConditions, policy
//! validations, messages, audit annotations, variables and mutations in
//! (`k8s.io/apiserver/pkg/admission/plugin/cel`), and their evaluation with its cost bounds.
//!
//! # Environment
//!
//! - `object`, `oldObject`: `dyn` — the objects as untyped JSON (maps and lists), `null` when
//!   absent (a create has no `oldObject`, a delete no `object`);
//! - `request`: `kubernetes.AdmissionRequest` (kind, resource, subResource, requestKind,
//!   requestResource, requestSubResource, name, namespace, operation, userInfo, dryRun,
//!   options), built as kube builds it, so fields Go omits when empty (`subResource`, `name`
//!   on a `generateName` create, `namespace`) are absent;
//! - `namespaceObject`: `kubernetes.Namespace` (metadata, spec, status of the request's
//!   namespace; `null` for cluster-scoped requests and for webhooks);
//! - `params`: `dyn`, declared only when the policy has a `paramKind` (`null` when its binding
//!   has no `paramRef`);
//! - `variables`: the policy's variables, each typed by its expression and computed at most
//!   once per evaluation context, when first selected (kube's lazy composition);
//! - in mutations, `JSONPatch{op, path, from, value}` literals and `jsonpatch.escapeKey`.
//!
//! - `authorizer`, `authorizer.requestResource`: versa-cel's authorization library, answered
//!   by the server's [`Authorize`] (not in messageExpressions, as in kube); unbound — an
//!   evaluation error — when the server has none.
//!
//! # Cost
//!
//! Every evaluation is bounded per call ([`PER_CALL_LIMIT`], 1,000,000: `operation cancelled:
//! actual cost limit exceeded`, an error of that expression) and per evaluation context by a
//! budget the caller picks (kube's: [`RUNTIME_CEL_COST_BUDGET`] for a policy's validations,
//! messages and audit annotations, and for each mutation; [`MATCH_CONDITIONS_BUDGET`] for
//! matchConditions). Variables are charged to the budget when computed. Running out stops the
//! whole context: `validation failed due to running out of cost budget, no further validation
//! rules will be run`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value as Json, json};
use versa_cel::ext::authz;
use versa_cel::opaque::authz::{AUTHORIZER_TYPE, Authorize, AuthzCheck, AuthzDecision, AuthzUser, RESOURCE_CHECK_TYPE};
use versa_cel::types::DeclField;
use versa_cel::{
    Activation, CompileOptions, CompiledExpression, CostTracker, DYN, DeclKind, DeclType, Environment, EvalError,
    LazyFields, ListType, ObjectType, Type, Value, Variable, compile_in, eval_with_lazy,
};

use crate::attributes::{Attributes, GroupVersionKind, GroupVersionResource};

pub use versa_cel::{PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET};

/// The budget of one webhook's or one policy binding's matchConditions
/// (`RuntimeCELCostBudgetMatchConditions`).
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

/// The longest message a `messageExpression` may produce (`MaxEvaluatedMessageExpressionSizeBytes`).
pub const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The text of an evaluation that ran out of budget.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The name of the lazily computed variable.
const VARIABLES: &str = "variables";
const AUTHORIZER: &str = "authorizer";
const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// What an expression must evaluate to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Returns {
    Bool,
    String,
    /// Audit annotation values: `string` or `null`.
    StringOrNull,
    /// Variables: anything.
    Any,
    /// JSONPatch mutations: `list(JSONPatch)`.
    JsonPatchList,
    /// ApplyConfiguration mutations: `Object`.
    ApplyConfiguration,
}

/// What an expression may refer to besides `object`, `oldObject`, `request` and
/// `namespaceObject`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Declarations {
    pub params: bool,
    /// The policy's `variables` type (the variables compiled so far).
    pub variables: Option<Arc<ObjectType>>,
    /// `JSONPatch` and `Object{...}` literals (mutations).
    pub patch_types: bool,
    /// The types of `object`/`oldObject` and `params` when known (type checking against
    /// schemas); `dyn` otherwise.
    pub object_type: Option<Type>,
    pub params_type: Option<Type>,
    /// `authorizer` and `authorizer.requestResource` (everywhere but in messageExpressions).
    pub authorizer: bool,
    /// No `variables` at all: kube checks webhook and policy matchConditions, and the
    /// expressions of a ValidatingAdmissionPolicy without variables, in an environment that
    /// does not declare it (`undeclared reference to 'variables'`).
    pub without_variables: bool,
}

/// One compiled expression, or why it does not compile (kube keeps both and reports the
/// error when the expression is evaluated).
#[derive(Clone, Debug)]
pub(crate) struct Expression {
    pub source: String,
    pub compiled: Result<CompiledExpression, String>,
}

impl Expression {
    /// Compiles `source`; the error is kube's detail text (`compilation failed: ERROR: ...`,
    /// `must evaluate to bool but got int`).
    pub fn compile(source: &str, decls: &Declarations, returns: Returns) -> Expression {
        let env = environment(decls);
        let compiled = compile_in(source, &env, &CompileOptions::default())
            .map_err(|e| format!("compilation failed: {e}"))
            .and_then(|c| check_returns(c, returns));
        Expression { source: source.to_owned(), compiled }
    }

    /// Whether the expression reads variable `name`.
    pub fn references(&self, name: &str) -> bool {
        self.compiled.as_ref().is_ok_and(|c| c.checked.referenced_idents.iter().any(|r| r == name))
    }

    /// The result type, `dyn` when the expression does not compile.
    pub fn result_type(&self) -> Type {
        self.compiled.as_ref().map_or(Type::Dyn, |c| c.result_type.clone())
    }
}

fn check_returns(c: CompiledExpression, returns: Returns) -> Result<CompiledExpression, String> {
    let t = &c.result_type;
    let ok = match returns {
        Returns::Any => true,
        Returns::Bool => *t == Type::Bool,
        Returns::String => *t == Type::String,
        Returns::StringOrNull => matches!(t, Type::String | Type::Null),
        Returns::JsonPatchList => {
            matches!(t, Type::List(e) if matches!(&**e, Type::Object(o) if o.name == "JSONPatch"))
        }
        Returns::ApplyConfiguration => matches!(t, Type::Object(o) if o.name == "Object"),
    };
    if ok {
        return Ok(c);
    }
    let want = match returns {
        Returns::Bool => "bool",
        Returns::String => "string",
        Returns::JsonPatchList => "list(JSONPatch)",
        Returns::ApplyConfiguration => "Object",
        Returns::StringOrNull => return Err(format!("must evaluate to one of [string null_type] but got {t}")),
        Returns::Any => "dyn",
    };
    Err(format!("must evaluate to {want} but got {t}"))
}

fn environment(decls: &Declarations) -> Environment {
    let var = |name: &str, ty: Type| Variable { name: name.to_owned(), ty };
    let object = decls.object_type.clone().unwrap_or(Type::Dyn);
    let mut variables = vec![
        var("object", object.clone()),
        var("oldObject", object),
        var("namespaceObject", namespace_type().cel_type()),
        var("request", request_type().cel_type()),
    ];
    if decls.params {
        variables.push(var("params", decls.params_type.clone().unwrap_or(Type::Dyn)));
    }
    if decls.authorizer {
        variables.push(var(AUTHORIZER, Type::Opaque(AUTHORIZER_TYPE)));
        variables.push(var(REQUEST_RESOURCE, Type::Opaque(RESOURCE_CHECK_TYPE)));
    }
    if !decls.without_variables {
        let vars_type = decls.variables.clone().unwrap_or_else(|| Arc::new(variables_type(Vec::new())));
        variables.push(var(VARIABLES, Type::Object(vars_type)));
    }
    let struct_types = if decls.patch_types { vec![json_patch_type()] } else { Vec::new() };
    Environment { variables, struct_types, dynamic_objects: decls.patch_types }
}

/// A policy's variables, compiled in order: each sees the ones before it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Variables {
    pub names: Vec<String>,
    pub exprs: Vec<Expression>,
    /// The `variables` type with every variable.
    pub ty: Option<Arc<ObjectType>>,
}

impl Variables {
    /// Compiles `vars` (name, expression) with `base`'s declarations.
    pub fn compile_in(vars: &[(String, String)], base: &Declarations) -> Variables {
        let mut fields: Vec<(String, DeclType)> = Vec::new();
        let mut out = Variables::default();
        for (name, source) in vars {
            let decls = Declarations { variables: Some(Arc::new(variables_type(fields.clone()))), ..base.clone() };
            let e = Expression::compile(source, &decls, Returns::Any);
            // A variable that does not compile is still declared, as `dyn`.
            fields.retain(|(n, _)| n != name);
            fields.push((name.clone(), decl_of(&e.result_type())));
            out.names.push(name.clone());
            out.exprs.push(e);
        }
        out.ty = Some(Arc::new(variables_type(fields)));
        out
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// kube's `convertCelTypeToDeclType`: scalars, lists and maps keep their types, anything else
/// (objects, optionals, ...) is `dyn`.
fn decl_of(t: &Type) -> DeclType {
    let kind = match t {
        Type::Bool
        | Type::Int
        | Type::Uint
        | Type::Double
        | Type::String
        | Type::Bytes
        | Type::Timestamp
        | Type::Duration
        | Type::Null => DeclKind::Scalar(t.clone()),
        Type::List(e) => {
            DeclKind::List { elem: Box::new(decl_of(e)), list_type: ListType::Atomic, map_keys: Vec::new() }
        }
        Type::Map(k, v) if **k == Type::String => DeclKind::Map { value: Box::new(decl_of(v)) },
        _ => DeclKind::Scalar(Type::Dyn),
    };
    DeclType { kind, max_elements: None, min_serialized_size: 1, int_maximum: None }
}

fn variables_type(fields: Vec<(String, DeclType)>) -> ObjectType {
    let fields = fields.into_iter().map(|(n, ty)| (n.clone(), field(&n, ty))).collect();
    ObjectType { name: "kubernetes.variables".into(), fields }
}

fn field(name: &str, ty: DeclType) -> DeclField {
    DeclField {
        name: name.to_owned(),
        property: name.to_owned(),
        ty,
        required: true,
        enum_values: Vec::new(),
        default: None,
    }
}

fn scalar(t: Type) -> DeclType {
    DeclType { kind: DeclKind::Scalar(t), max_elements: None, min_serialized_size: 1, int_maximum: None }
}

fn list(elem: DeclType) -> DeclType {
    DeclType {
        kind: DeclKind::List { elem: Box::new(elem), list_type: ListType::Atomic, map_keys: Vec::new() },
        max_elements: None,
        min_serialized_size: 2,
        int_maximum: None,
    }
}

fn map(value: DeclType) -> DeclType {
    DeclType {
        kind: DeclKind::Map { value: Box::new(value) },
        max_elements: None,
        min_serialized_size: 2,
        int_maximum: None,
    }
}

fn object(name: &str, fields: Vec<(&str, DeclType)>) -> DeclType {
    let fields: BTreeMap<String, DeclField> = fields.into_iter().map(|(n, t)| (n.to_owned(), field(n, t))).collect();
    DeclType {
        kind: DeclKind::Object(Arc::new(ObjectType { name: name.to_owned(), fields })),
        max_elements: None,
        min_serialized_size: 2,
        int_maximum: None,
    }
}

/// kube's `BuildRequestType`.
pub(crate) fn request_type() -> &'static DeclType {
    static T: OnceLock<DeclType> = OnceLock::new();
    T.get_or_init(|| {
        let s = || scalar(Type::String);
        let gvk = || object("kubernetes.GroupVersionKind", vec![("group", s()), ("version", s()), ("kind", s())]);
        let gvr =
            || object("kubernetes.GroupVersionResource", vec![("group", s()), ("version", s()), ("resource", s())]);
        let user = object(
            "kubernetes.UserInfo",
            vec![("username", s()), ("uid", s()), ("groups", list(s())), ("extra", map(list(s())))],
        );
        object(
            "kubernetes.AdmissionRequest",
            vec![
                ("kind", gvk()),
                ("resource", gvr()),
                ("subResource", s()),
                ("requestKind", gvk()),
                ("requestResource", gvr()),
                ("requestSubResource", s()),
                ("name", s()),
                ("namespace", s()),
                ("operation", s()),
                ("userInfo", user),
                ("dryRun", scalar(Type::Bool)),
                ("options", DYN.clone()),
            ],
        )
    })
}

/// kube's `BuildNamespaceType` (its metadata field `UID` is spelled so; the object's is `uid`,
/// so `namespaceObject.metadata.UID` is never set, as in kube).
pub(crate) fn namespace_type() -> &'static DeclType {
    static T: OnceLock<DeclType> = OnceLock::new();
    T.get_or_init(|| {
        let s = || scalar(Type::String);
        let condition = object(
            "kubernetes.NamespaceCondition",
            vec![
                ("status", s()),
                ("type", s()),
                ("lastTransitionTime", scalar(Type::Timestamp)),
                ("message", s()),
                ("reason", s()),
            ],
        );
        let metadata = object(
            "kubernetes.NamespaceMetadata",
            vec![
                ("name", s()),
                ("generateName", s()),
                ("namespace", s()),
                ("labels", map(s())),
                ("annotations", map(s())),
                ("UID", s()),
                ("creationTimestamp", scalar(Type::Timestamp)),
                ("deletionGracePeriodSeconds", scalar(Type::Int)),
                ("deletionTimestamp", scalar(Type::Timestamp)),
                ("generation", scalar(Type::Int)),
                ("resourceVersion", s()),
                ("finalizers", list(s())),
            ],
        );
        object(
            "kubernetes.Namespace",
            vec![
                ("metadata", metadata),
                ("spec", object("kubernetes.NamespaceSpec", vec![("finalizers", list(s()))])),
                ("status", object("kubernetes.NamespaceStatus", vec![("conditions", list(condition)), ("phase", s())])),
            ],
        )
    })
}

/// The `JSONPatch` message type of mutations.
fn json_patch_type() -> Arc<ObjectType> {
    static T: OnceLock<Arc<ObjectType>> = OnceLock::new();
    T.get_or_init(|| {
        let s = || scalar(Type::String);
        match object("JSONPatch", vec![("op", s()), ("path", s()), ("from", s()), ("value", DYN.clone())]).kind {
            DeclKind::Object(o) => o,
            _ => Arc::new(ObjectType { name: "JSONPatch".into(), fields: BTreeMap::new() }),
        }
    })
    .clone()
}

/// The `request` variable as kube builds it (`CreateAdmissionRequest`, then its unstructured
/// JSON): `kind`/`resource` are the matched ones, `requestKind`/`requestResource` the
/// request's.
pub(crate) fn request_json(attrs: &Attributes, resource: &GroupVersionResource, kind: &GroupVersionKind) -> Json {
    fn s(v: &str) -> Json {
        Json::String(v.to_owned())
    }
    fn triple(a: (&str, &str), b: (&str, &str), c: (&str, &str)) -> Json {
        let mut m = Map::new();
        for (k, v) in [a, b, c] {
            m.insert(k.to_owned(), s(v));
        }
        Json::Object(m)
    }
    let gvk = |k: &GroupVersionKind| triple(("group", &k.group), ("version", &k.version), ("kind", &k.kind));
    let gvr =
        |r: &GroupVersionResource| triple(("group", &r.group), ("version", &r.version), ("resource", &r.resource));
    let mut m = Map::new();
    m.insert("uid".into(), s(""));
    m.insert("kind".into(), gvk(kind));
    m.insert("resource".into(), gvr(resource));
    if !attrs.subresource.is_empty() {
        m.insert("subResource".into(), s(&attrs.subresource));
        m.insert("requestSubResource".into(), s(&attrs.subresource));
    }
    m.insert("requestKind".into(), gvk(&attrs.kind));
    m.insert("requestResource".into(), gvr(&attrs.resource));
    if !attrs.name.is_empty() {
        m.insert("name".into(), s(&attrs.name));
    }
    if !attrs.namespace.is_empty() {
        m.insert("namespace".into(), s(&attrs.namespace));
    }
    m.insert("operation".into(), s(attrs.operation.as_str()));
    let u = &attrs.user;
    let mut user = Map::new();
    if !u.username.is_empty() {
        user.insert("username".into(), s(&u.username));
    }
    if !u.uid.is_empty() {
        user.insert("uid".into(), s(&u.uid));
    }
    if !u.groups.is_empty() {
        user.insert("groups".into(), Json::Array(u.groups.iter().map(|g| s(g)).collect()));
    }
    if !u.extra.is_empty() {
        let extra = u.extra.iter().map(|(k, v)| (k.clone(), Json::Array(v.iter().map(|x| s(x)).collect()))).collect();
        user.insert("extra".into(), Json::Object(extra));
    }
    m.insert("userInfo".into(), Json::Object(user));
    m.insert("dryRun".into(), Json::Bool(attrs.dry_run));
    m.insert("options".into(), attrs.options.clone().unwrap_or(Json::Null));
    Json::Object(m)
}

/// The `namespaceObject` variable: kube's `CreateNamespaceObject` (metadata reduced to the
/// fields it copies; spec and status as they are).
pub(crate) fn namespace_json(ns: &Json) -> Json {
    const KEPT: [&str; 12] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    let mut out = Map::new();
    if let Some(meta) = ns.get("metadata").and_then(Json::as_object) {
        let kept: Map<String, Json> =
            meta.iter().filter(|(k, _)| KEPT.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
        out.insert("metadata".into(), Json::Object(kept));
    }
    for k in ["spec", "status"] {
        out.insert(k.into(), ns.get(k).cloned().unwrap_or_else(|| json!({})));
    }
    Json::Object(out)
}

/// Which of the costlier inputs a set of expressions reads (the others are bound to `null`,
/// which nothing reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Uses {
    pub request: bool,
    pub namespace: bool,
    pub authorizer: bool,
}

impl Uses {
    pub fn of<'e>(exprs: impl IntoIterator<Item = &'e Expression>) -> Uses {
        let mut u = Uses::default();
        for e in exprs {
            u.request |= e.references("request");
            u.namespace |= e.references("namespaceObject");
            u.authorizer |= e.references(AUTHORIZER) || e.references(REQUEST_RESOURCE);
        }
        u
    }
}

/// The values an evaluation context binds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Inputs<'a> {
    pub object: Option<&'a Json>,
    pub old_object: Option<&'a Json>,
    /// `None` when no expression reads it (it is then `null`).
    pub request: Option<&'a Json>,
    pub namespace: Option<&'a Json>,
    pub params: Option<&'a Json>,
    /// The request's authorizer, when the server has one and an expression reads it.
    pub authz: Option<&'a RequestAuthz>,
}

/// The `authorizer` of one request: the user, the server's authorizer (asked once per
/// distinct question), and the request's own resource for `authorizer.requestResource`.
#[derive(Debug)]
pub(crate) struct RequestAuthz {
    pub user: AuthzUser,
    pub authorizer: Arc<dyn Authorize>,
    pub request: AuthzCheck,
}

impl RequestAuthz {
    pub fn new(attrs: &Attributes, authorizer: Arc<dyn Authorize>) -> RequestAuthz {
        let u = &attrs.user;
        RequestAuthz {
            user: AuthzUser {
                username: u.username.clone(),
                uid: u.uid.clone(),
                groups: u.groups.clone(),
                extra: u.extra.clone(),
            },
            authorizer: Arc::new(CachingAuthorizer { inner: authorizer, answers: Mutex::new(Vec::new()) }),
            request: AuthzCheck {
                group: attrs.resource.group.clone(),
                resource: attrs.resource.resource.clone(),
                subresource: attrs.subresource.clone(),
                namespace: attrs.namespace.clone(),
                name: attrs.name.clone(),
                ..AuthzCheck::default()
            },
        }
    }
}

/// kube's `CachingAuthorizer`: within one request, a question asked twice is answered once.
#[derive(Debug)]
struct CachingAuthorizer {
    inner: Arc<dyn Authorize>,
    answers: Mutex<Vec<(AuthzUser, AuthzCheck, AuthzDecision)>>,
}

impl Authorize for CachingAuthorizer {
    fn authorize(&self, user: &AuthzUser, check: &AuthzCheck) -> AuthzDecision {
        let cached = |answers: &Vec<(AuthzUser, AuthzCheck, AuthzDecision)>| {
            answers.iter().find(|(u, c, _)| u == user && c == check).map(|(_, _, d)| d.clone())
        };
        if let Ok(answers) = self.answers.lock()
            && let Some(d) = cached(&answers)
        {
            return d;
        }
        let d = self.inner.authorize(user, check);
        if let Ok(mut answers) = self.answers.lock() {
            answers.push((user.clone(), check.clone(), d.clone()));
        }
        d
    }
}

/// Why an evaluation context stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OutOfBudget;

/// One evaluation context: the bound variables, the lazily computed `variables.*`, and what is
/// left of the budget.
pub(crate) struct Context<'a> {
    act: Activation<'a>,
    vars: LazyVariables<'a>,
    remaining: u64,
}

impl<'a> Context<'a> {
    /// A context binding `inputs`; the error is CEL's when an input does not fit its declared
    /// type.
    pub fn new(inputs: Inputs<'a>, variables: Option<&'a Variables>, budget: u64) -> Result<Context<'a>, EvalError> {
        static NO_VARIABLES: OnceLock<Variables> = OnceLock::new();
        let variables = variables.unwrap_or_else(|| NO_VARIABLES.get_or_init(Variables::default));
        let mut act = Activation::new();
        let bind_json = |j: Option<&'a Json>, decl: &'a DeclType| -> Result<Value<'a>, EvalError> {
            match j {
                Some(j) => Value::from_json(j, decl),
                None => Ok(Value::Null),
            }
        };
        act.bind_static("object", bind_json(inputs.object, &DYN)?);
        act.bind_static("oldObject", bind_json(inputs.old_object, &DYN)?);
        act.bind_static("request", bind_json(inputs.request, request_type())?);
        act.bind_static("namespaceObject", bind_json(inputs.namespace, namespace_type())?);
        act.bind_static("params", bind_json(inputs.params, &DYN)?);
        if let Some(a) = inputs.authz {
            act.bind_static(AUTHORIZER, authz::authorizer_value(a.user.clone(), a.authorizer.clone()));
            act.bind_static(
                REQUEST_RESOURCE,
                authz::resource_check_value(a.user.clone(), a.authorizer.clone(), a.request.clone()),
            );
        }
        let vars = LazyVariables {
            vars: variables,
            cache: RefCell::new(vec![None; variables.names.len()]),
            cost: Cell::new(0),
        };
        Ok(Context { act, vars, remaining: budget })
    }

    /// What is left of the budget.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Evaluates `e`: its value, or its error text (`expression '<source>' resulted in error:
    /// ...`, `compilation error: ...`); `Err(OutOfBudget)` when the context's budget is spent.
    pub fn eval(&mut self, e: &'a Expression) -> Result<Result<Value<'a>, String>, OutOfBudget> {
        let compiled = match &e.compiled {
            Ok(c) => c,
            Err(detail) => return Ok(Err(format!("compilation error: {detail}"))),
        };
        let mut tracker = CostTracker::with_limits(PER_CALL_LIMIT, self.remaining);
        let result = eval_with_lazy(compiled, &self.act, VARIABLES, &self.vars, &mut tracker);
        let composition = self.vars.cost.replace(0);
        if matches!(result, Err(EvalError::BudgetExceeded)) || composition > self.remaining {
            self.remaining = 0;
            return Err(OutOfBudget);
        }
        self.remaining -= composition;
        let cost = tracker.last_cost();
        if cost > self.remaining {
            self.remaining = 0;
            return Err(OutOfBudget);
        }
        self.remaining -= cost;
        Ok(result.map_err(|err| format!("expression '{}' resulted in error: {err}", e.source)))
    }
}

/// kube's `matchconditions.Matcher.Match`: every condition is evaluated (one budget for all);
/// one that is `false` means no match; errors otherwise fail (`fail`) or mean no match. The
/// error text is the errors' aggregate.
pub(crate) fn evaluate_conditions<'a>(
    conditions: &'a [(String, Expression)],
    inputs: Inputs<'a>,
    variables: Option<&'a Variables>,
    fail: bool,
) -> Result<bool, String> {
    let on_error = |e: String| if fail { Err(e) } else { Ok(false) };
    let mut ctx = match Context::new(inputs, variables, MATCH_CONDITIONS_BUDGET) {
        Ok(c) => c,
        Err(e) => return on_error(e.to_string()),
    };
    let mut results = Vec::with_capacity(conditions.len());
    for (_, e) in conditions {
        match ctx.eval(e) {
            Ok(r) => results.push(r),
            Err(_) => return on_error(OUT_OF_BUDGET.to_owned()),
        }
    }
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(versa_cel::Value::Bool(false)) => return Ok(false),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => on_error(errors.swap_remove(0)),
        _ => on_error(format!("[{}]", errors.join(", "))),
    }
}

/// `variables`, computed on first selection and kept for the context.
struct LazyVariables<'a> {
    vars: &'a Variables,
    cache: RefCell<Vec<Option<Result<Value<'a>, EvalError>>>>,
    /// The cost of the variables computed since the last expression.
    cost: Cell<u64>,
}

impl<'a> LazyFields<'a> for LazyVariables<'a> {
    fn has(&self, name: &str) -> bool {
        self.vars.index(name).is_some()
    }

    fn field(&self, name: &str, activation: &Activation<'a>) -> Result<Value<'a>, EvalError> {
        let Some(i) = self.vars.index(name) else {
            return Err(EvalError::new(format!("no such key: {name}")));
        };
        if let Some(Some(done)) = self.cache.borrow().get(i) {
            return done.clone();
        }
        let result = match &self.vars.exprs[i].compiled {
            Err(e) => Err(EvalError::new(format!("composited variable {name:?} fails to compile: {e}"))),
            Ok(c) => {
                let mut tracker = CostTracker::with_limits(PER_CALL_LIMIT, u64::MAX);
                let r = eval_with_lazy(c, activation, VARIABLES, self, &mut tracker);
                self.cost.set(self.cost.get().saturating_add(tracker.last_cost()));
                r.map_err(|e| EvalError::new(format!("composited variable {name:?} fails to evaluate: {e}")))
            }
        };
        if let Some(slot) = self.cache.borrow_mut().get_mut(i) {
            *slot = Some(result.clone());
        }
        result
    }
}

/// The text of a string value.
pub(crate) fn as_str<'v>(v: &'v Value<'_>) -> Option<&'v str> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}
