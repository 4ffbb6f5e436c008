//! The RBAC scenario (issue 38): what deciding by RBAC costs a GET and a LIST next to
//! `system:masters`, whom the authorizer lets through before reading any policy.
//!
//! One server with standalone's RBAC authorizer, holding 100 Roles and 1,000 bindings (900
//! RoleBindings in the read namespace and 100 ClusterRoleBindings, all naming other users); the
//! user `alice` is granted `get` and `list` by the last RoleBinding, so each of her requests
//! walks every ClusterRoleBinding and every RoleBinding of the namespace before it is allowed
//! (kube's worst case). Alice's GET and LIST of 1,000 objects are measured against the admin's
//! (`system:masters`) in alternating rounds. Target: ≤ 1.1× the time.

use super::*;

const ROLES: usize = 100;
const ROLE_BINDINGS: usize = 900;
const CLUSTER_ROLE_BINDINGS: usize = 100;
const NAMESPACE: &str = "listed";

pub(super) fn rbac(settings: &Settings, server_rt: &Runtime, client_rt: &Runtime) {
    let versa = Versa::start_rbac(server_rt);
    let admin = Client::new(versa.dir.path(), versa.addr);
    let kubeconfig =
        pki::issue_user_kubeconfig(versa.dir.path(), "alice", &["devs".to_owned()], 1, "https://unused").unwrap();
    let alice = Client::with_identity(versa.dir.path(), versa.addr, &kubeconfig);
    let timing = settings.timing;
    println!();
    println!(
        "## RBAC: {ROLES} Roles, {ROLE_BINDINGS} RoleBindings and {CLUSTER_ROLE_BINDINGS} ClusterRoleBindings; alice (granted by the last binding) against system:masters"
    );
    let mut rows = Vec::new();
    client_rt.block_on(async {
        let mut conn = admin.connect().await;
        define_get_target(&mut conn).await;
        fill(&admin, settings.connections, LIST_PATH, LIST_OBJECTS, Arc::new(|i| crontab(&format!("l-{i:04}")))).await;
        let rule = json!([{"apiGroups": [GROUP], "resources": ["crontabs"], "verbs": ["get", "list"]}]);
        for i in 0..ROLES {
            let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": format!("role-{i:03}"), "namespace": NAMESPACE}, "rules": rule});
            post(&mut conn, &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/roles"), &role).await;
        }
        let cluster_role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "crontab-reader"}, "rules": rule});
        post(&mut conn, "/apis/rbac.authorization.k8s.io/v1/clusterroles", &cluster_role).await;
        for i in 0..CLUSTER_ROLE_BINDINGS {
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("other-{i:04}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crontab-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": format!("user-{i}")},
                             {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": format!("group-{i}")}]});
            post(&mut conn, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding).await;
        }
        for i in 0..ROLE_BINDINGS {
            // The last one (by name, the order they are visited in) is alice's.
            let subject = if i + 1 == ROLE_BINDINGS { "alice".to_owned() } else { format!("user-{i}") };
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": format!("binding-{i:04}"), "namespace": NAMESPACE},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{:03}", i % ROLES)},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": subject}]});
            post(&mut conn, &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings"), &binding)
                .await;
        }
        // The policy is read by a watch: wait until alice is let in.
        let mut alice_conn = alice.connect().await;
        while alice_conn.send(Method::GET, LIST_PATH, None).await.0 != StatusCode::OK {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let get = |_: usize, _: usize| (Method::GET, RBAC_GET_PATH.to_owned(), None);
        let (ours, masters) = compare(&alice, &admin, settings.connections, timing, StatusCode::OK, get).await;
        let ratio = masters.rps() / ours.rps();
        rows.push(
            Row::new("GET one object", ours.rps(), Some(masters.rps()), "req/s")
                .target(format!("≤ 1.1× the time: {ratio:.2}×, {}", met(ratio <= 1.1))),
        );
        rows.push(Row::new("GET p99", ms(ours.p(0.99)), Some(ms(masters.p(0.99))), "ms"));
        let list = |_: usize, _: usize| (Method::GET, LIST_PATH.to_owned(), None);
        let (ours, masters) = compare(&alice, &admin, LIST_CLIENTS, timing, StatusCode::OK, list).await;
        let ratio = masters.rps() / ours.rps();
        rows.push(
            Row::new(format!("LIST {LIST_OBJECTS}, {LIST_CLIENTS} clients"), ours.rps(), Some(masters.rps()), "req/s")
                .target(format!("≤ 1.1× the time: {ratio:.2}×, {}", met(ratio <= 1.1))),
        );
        rows.push(Row::new(
            format!("LIST {LIST_OBJECTS}, {LIST_CLIENTS} clients, p99"),
            ms(ours.p(0.99)),
            Some(ms(masters.p(0.99))),
            "ms",
        ));
    });
    versa.stop(server_rt);
    print_rows(&rows, "alice (RBAC)", "system:masters", "alice relative to system:masters");
}

/// The object alice GETs: in the namespace her binding is in.
const RBAC_GET_PATH: &str = "/apis/stable.example.com/v1/namespaces/listed/crontabs/l-0000";

async fn post(conn: &mut Conn, path: &str, object: &Value) {
    let (status, body) = conn.send(Method::POST, path, Some(json_bytes(object))).await;
    assert_eq!(status, StatusCode::CREATED, "POST {path}: {}", String::from_utf8_lossy(&body));
}
