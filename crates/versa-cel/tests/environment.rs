//! Expressions compiled in an [`Environment`] rather than on a schema node: the pieces
//! Kubernetes' admission environment is made of — untyped JSON variables (`object`,
//! `params`), message literals (`JSONPatch{...}`), lazily computed `variables.*` and
//! `jsonpatch.escapeKey`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value as Json, json};
use versa_cel::types::DeclField;
use versa_cel::{
    Activation, CompileOptions, CompiledExpression, CostTracker, DYN, DeclKind, DeclType, Environment, EvalError,
    LazyFields, ObjectType, Type, Value, Variable, compile_in, eval, eval_with_lazy,
};

fn env(vars: &[(&str, Type)]) -> Environment {
    Environment {
        variables: vars.iter().map(|(n, t)| Variable { name: (*n).to_owned(), ty: t.clone() }).collect(),
        struct_types: vec![json_patch_type()],
        dynamic_objects: true,
    }
}

fn string_field(name: &str) -> (String, DeclField) {
    let ty = DeclType {
        kind: DeclKind::Scalar(Type::String),
        max_elements: None,
        min_serialized_size: 2,
        int_maximum: None,
    };
    (
        name.to_owned(),
        DeclField {
            name: name.to_owned(),
            property: name.to_owned(),
            ty,
            required: false,
            enum_values: vec![],
            default: None,
        },
    )
}

fn json_patch_type() -> Arc<ObjectType> {
    let mut fields: BTreeMap<String, DeclField> = ["op", "path", "from"].into_iter().map(string_field).collect();
    fields.insert(
        "value".into(),
        DeclField {
            name: "value".into(),
            property: "value".into(),
            ty: DYN.clone(),
            required: false,
            enum_values: vec![],
            default: None,
        },
    );
    Arc::new(ObjectType { name: "JSONPatch".into(), fields })
}

fn compile(source: &str, vars: &[(&str, Type)]) -> CompiledExpression {
    compile_in(source, &env(vars), &CompileOptions::default()).unwrap_or_else(|e| panic!("{source}: {e}"))
}

fn run(source: &str, object: &Json) -> Result<Option<Json>, EvalError> {
    let compiled = compile(source, &[("object", Type::Dyn)]);
    let mut act = Activation::new();
    act.bind("object", Value::from_json(object, &DYN)?);
    let v = eval(&compiled, &act, &mut CostTracker::default())?;
    versa_cel::json::to_json(&v)
}

#[test]
fn untyped_json_is_maps_and_lists() {
    let object =
        json!({"spec": {"replicas": 3, "tags": ["a", "b"], "ratio": 0.5, "on": true}, "metadata": {"name": "x"}});
    let cases = [
        ("object.spec.replicas > 2", json!(true)),
        ("object.spec.tags.size()", json!(2)),
        ("object.spec.tags[1]", json!("b")),
        ("'a' in object.spec.tags", json!(true)),
        ("has(object.spec.missing)", json!(false)),
        ("has(object.spec.tags)", json!(true)),
        ("object.spec.ratio * 2.0", json!(1.0)),
        ("object.spec.on", json!(true)),
        ("object.metadata == {'name': 'x'}", json!(true)),
        ("type(object) == map", json!(true)),
        ("object.spec.tags.map(t, t + '!')", json!(["a!", "b!"])),
        ("object.?spec.?missing.orValue('none')", json!("none")),
    ];
    for (source, want) in cases {
        assert_eq!(run(source, &object).unwrap(), Some(want), "{source}");
    }
    assert_eq!(run("object.spec.missing", &object).unwrap_err().to_string(), "no such key: missing");
}

#[test]
fn message_literals_of_declared_types() {
    let object = json!({});
    let got = run(r#"[JSONPatch{op: "add", path: "/spec/x", value: {"a": [1, 2]}}]"#, &object).unwrap();
    assert_eq!(got, Some(json!([{"op": "add", "path": "/spec/x", "value": {"a": [1, 2]}}])));
    let compiled = compile(r#"[JSONPatch{op: "add", path: "/a"}]"#, &[]);
    assert_eq!(compiled.result_type.to_string(), "list(JSONPatch)");

    let e = env(&[]);
    let opts = CompileOptions::default();
    let err = compile_in(r#"JSONPatch{op: 1}"#, &e, &opts).unwrap_err().to_string();
    assert!(err.contains("expected type of field 'op' is 'string' but provided type is 'int'"), "{err}");
    let err = compile_in(r#"JSONPatch{nope: "x"}"#, &e, &opts).unwrap_err().to_string();
    assert!(err.contains("undefined field 'nope'"), "{err}");
    let err = compile_in(r#"Other{a: 1}"#, &e, &opts).unwrap_err().to_string();
    assert!(err.contains("undeclared reference to 'Other' (in container '')"), "{err}");
}

#[test]
fn escape_key() {
    assert_eq!(run("jsonpatch.escapeKey('example.com/a~b')", &json!({})).unwrap(), Some(json!("example.com~1a~0b")));
}

/// Variables computed on first selection, once, their cost counted apart.
struct Vars<'a> {
    names: Vec<&'static str>,
    compiled: &'a [CompiledExpression],
    cache: RefCell<Vec<Option<Result<Value<'a>, EvalError>>>>,
    evaluations: Cell<usize>,
    cost: Cell<u64>,
}

impl<'a> LazyFields<'a> for Vars<'a> {
    fn has(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    fn field(&self, name: &str, activation: &Activation<'a>) -> Result<Value<'a>, EvalError> {
        let i = self.names.iter().position(|n| *n == name).unwrap();
        if let Some(v) = &self.cache.borrow()[i] {
            return v.clone();
        }
        self.evaluations.set(self.evaluations.get() + 1);
        let mut tracker = CostTracker::default();
        let v = eval_with_lazy(&self.compiled[i], activation, "variables", self, &mut tracker);
        self.cost.set(self.cost.get() + tracker.last_cost());
        self.cache.borrow_mut()[i] = Some(v.clone());
        v
    }
}

fn variables_type(fields: &[(&str, Type)]) -> Type {
    let fields = fields
        .iter()
        .map(|(n, t)| {
            let kind = DeclKind::Scalar(t.clone());
            let ty = DeclType { kind, max_elements: None, min_serialized_size: 1, int_maximum: None };
            (
                (*n).to_owned(),
                DeclField {
                    name: (*n).to_owned(),
                    property: (*n).to_owned(),
                    ty,
                    required: true,
                    enum_values: vec![],
                    default: None,
                },
            )
        })
        .collect();
    Type::Object(Arc::new(ObjectType { name: "kubernetes.variables".into(), fields }))
}

#[test]
fn lazy_variables_are_computed_once_on_selection() {
    // `b` uses `a`; the expression uses `b` twice and `a` once.
    let a = compile("object.spec.replicas * 2", &[("object", Type::Dyn), ("variables", variables_type(&[]))]);
    let vars_ab = variables_type(&[("a", Type::Int)]);
    let b = compile("variables.a + 1", &[("object", Type::Dyn), ("variables", vars_ab)]);
    let all = variables_type(&[("a", Type::Int), ("b", Type::Int), ("bad", Type::Dyn)]);
    let bad = compile("object.nope", &[("object", Type::Dyn)]);
    let compiled = [a, b, bad];
    let expr = compile(
        "variables.b + variables.b + variables.a == 14 && has(variables.bad)",
        &[("object", Type::Dyn), ("variables", all.clone())],
    );
    let object = json!({"spec": {"replicas": 2}});
    let vars = Vars {
        names: vec!["a", "b", "bad"],
        compiled: &compiled,
        cache: RefCell::new(vec![None, None, None]),
        evaluations: Cell::new(0),
        cost: Cell::new(0),
    };
    let mut act = Activation::new();
    act.bind("object", Value::from_json(&object, &DYN).unwrap());
    let mut tracker = CostTracker::default();
    let v = eval_with_lazy(&expr, &act, "variables", &vars, &mut tracker).unwrap();
    assert!(matches!(v, Value::Bool(true)));
    assert_eq!(vars.evaluations.get(), 2, "a and b once each; has() computes nothing");
    assert!(vars.cost.get() > 0);

    // An error in a variable is the selecting expression's error.
    let uses_bad = compile("variables.bad == 1", &[("object", Type::Dyn), ("variables", all)]);
    let err = eval_with_lazy(&uses_bad, &act, "variables", &vars, &mut CostTracker::default()).unwrap_err();
    assert_eq!(err.to_string(), "no such key: nope");
}

/// Allows `get` on `/healthz`, anything on `apps` deployments in namespace `a`, and reports an
/// error for group `broken`.
#[derive(Debug)]
struct FakeAuthz;

impl versa_cel::opaque::authz::Authorize for FakeAuthz {
    fn authorize(
        &self,
        user: &versa_cel::opaque::authz::AuthzUser,
        c: &versa_cel::opaque::authz::AuthzCheck,
    ) -> versa_cel::opaque::authz::AuthzDecision {
        use versa_cel::opaque::authz::AuthzDecision;
        if c.group == "broken" {
            return AuthzDecision { allowed: false, reason: String::new(), error: Some("authorizer down".into()) };
        }
        let allowed = match &c.path {
            Some(p) => p == "/healthz" && c.verb == "get",
            None => c.group == "apps" && c.resource == "deployments" && c.namespace == "a",
        };
        AuthzDecision { allowed, reason: format!("{} {} {}", user.username, c.verb, c.subresource), error: None }
    }
}

#[test]
fn the_authorizer_library() {
    use versa_cel::ext::authz::{authorizer_value, resource_check_value};
    use versa_cel::opaque::authz::{AUTHORIZER_TYPE, AuthzCheck, AuthzUser, RESOURCE_CHECK_TYPE};
    let vars = [
        ("authorizer", Type::Opaque(AUTHORIZER_TYPE)),
        ("authorizer.requestResource", Type::Opaque(RESOURCE_CHECK_TYPE)),
    ];
    let user = AuthzUser { username: "alice".into(), ..AuthzUser::default() };
    let authz: Arc<dyn versa_cel::opaque::authz::Authorize> = Arc::new(FakeAuthz);
    let request = AuthzCheck {
        group: "apps".into(),
        resource: "deployments".into(),
        subresource: "scale".into(),
        namespace: "a".into(),
        name: "web".into(),
        ..AuthzCheck::default()
    };
    let run = |source: &str| -> Result<Option<Json>, EvalError> {
        let compiled = compile(source, &vars);
        let mut act = Activation::new();
        act.bind("authorizer", authorizer_value(user.clone(), authz.clone()));
        act.bind("authorizer.requestResource", resource_check_value(user.clone(), authz.clone(), request.clone()));
        let mut tracker = CostTracker::default();
        let v = eval(&compiled, &act, &mut tracker)?;
        versa_cel::json::to_json(&v)
    };
    let cases = [
        ("authorizer.path('/healthz').check('get').allowed()", json!(true)),
        ("authorizer.path('/healthz').check('post').allowed()", json!(false)),
        (
            "authorizer.group('apps').resource('deployments').namespace('a').name('x').check('update').allowed()",
            json!(true),
        ),
        ("authorizer.group('apps').resource('deployments').namespace('b').check('update').allowed()", json!(false)),
        ("authorizer.requestResource.check('update').reason()", json!("alice update scale")),
        (
            "authorizer.serviceAccount('ns', 'sa').path('/x').check('get').reason()",
            json!("system:serviceaccount:ns:sa get "),
        ),
        ("authorizer.group('broken').resource('x').check('get').errored()", json!(true)),
        ("authorizer.group('broken').resource('x').check('get').error()", json!("authorizer down")),
    ];
    for (source, want) in cases {
        assert_eq!(run(source).unwrap(), Some(want), "{source}");
    }
    assert_eq!(run("authorizer.path('').check('get').allowed()").unwrap_err().to_string(), "path must not be empty");
    assert_eq!(
        run("authorizer.serviceAccount('NS', 'sa').path('/x').check('get').allowed()").unwrap_err().to_string(),
        "Invalid service account namespace"
    );
    // A check costs 350,000: three are over the per-call limit.
    let three = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || authorizer.path('/c').check('get').allowed()";
    assert_eq!(run(three).unwrap_err().to_string(), "operation cancelled: actual cost limit exceeded");
    let err = compile_in("authorizer.path(1)", &env(&vars), &CompileOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("found no matching overload for 'path' applied to 'kubernetes.authorization.Authorizer.(int)'"),
        "{err}"
    );
}

#[test]
fn dynamic_object_literals() {
    let object = json!({"spec": {"replicas": 3}});
    let got = run(
        "Object{spec: Object.spec{replicas: object.spec.replicas + 1, template: Object.spec.template{x: [1]}}}",
        &object,
    )
    .unwrap();
    assert_eq!(got, Some(json!({"spec": {"replicas": 4, "template": {"x": [1]}}})));
    let compiled = compile("Object{spec: Object.spec{}}.spec.anything", &[]);
    assert_eq!(compiled.result_type, Type::Dyn);
    let compiled = compile("Object{}", &[]);
    assert_eq!(compiled.result_type.to_string(), "Object");
    let e = Environment { dynamic_objects: false, ..env(&[]) };
    let err = compile_in("Object{}", &e, &CompileOptions::default()).unwrap_err().to_string();
    assert!(err.contains("undeclared reference to 'Object' (in container '')"), "{err}");
}
