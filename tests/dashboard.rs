//! The Grafana dashboard `dashboards/kube-informer.json`, read query by
//! query and checked against what the crate's exporter serves: the mirror
//! operator of `examples/operator/` (its own modules, compiled into this
//! test), sharded over Leases on the fake API server, scraped over HTTP at
//! `/metrics`. Informers, subscriptions, the work queue, the controller and
//! the shard all register there, so the scrape holds every family
//! `METRICS.md` lists (checked first).
//!
//! # Rules
//!
//! - **DB1** Every metric a query or a variable reads is served. A histogram
//!   `x` is served as `x_bucket`, `x_sum` and `x_count`, never as `x`.
//! - **DB2** Every label a matcher, a `by`/`without`, an `on`/`group_left`
//!   or a variable's `label_values` names is on the series it applies to
//!   (`job` and `instance` count: Prometheus adds them to every series).
//! - **DB3** A quantile is taken over buckets still grouped by `le`, and the
//!   two sides of a vector operation carry the same labels or say which to
//!   match `on`.
//! - **DB4** A legend names only labels the query's result carries.
//! - **DB5** Every query goes to the `${datasource}` variable and uses only
//!   variables the dashboard defines.
//! - **DB6** Every panel's description opens with the question it answers;
//!   the four rows (cache freshness, queue, reconciles, shards) are there;
//!   panels fit the 24-column grid without overlapping.
//! - **DB7** The queries are read as PromQL reads them (grouping before or
//!   after the arguments, operator precedence, vector-matching modifiers,
//!   `__name__` matchers, braces inside strings), and what the reader does
//!   not know is refused rather than skipped, so no query slips past
//!   DB1–DB4 unread.
//!
//! The query reader and the label tracking are in `tests/dashboard/`.

use crate::operator::{controller, metrics_http, mirror, sharding};

#[path = "dashboard/check.rs"]
mod check;
#[path = "dashboard/promql.rs"]
mod promql;
use crate::scrape_common;

use std::{collections::BTreeSet, future::ready, sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{ConfigMap, Namespace},
};
use kube::{ResourceExt, api::ObjectMeta};
use kube_informer::{informer::Defaults, runner::Action};
use kube_informer_testing::{FakeApiServer, ResourceType};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use check::Served;
use controller::Operator;
use mirror::{Labels, Mirror};
use scrape_common::scrape;
use sharding::ShardArgs;

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/dashboards/kube-informer.json");
const METRICS_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/METRICS.md");

/// The rows the dashboard is organised in, in order.
const ROWS: [&str; 4] = [
    "Cache freshness and lag per subscriber",
    "Queue depth and wait",
    "Reconcile rate, errors and latency",
    "Shard ownership",
];

fn dashboard() -> Value {
    let text = std::fs::read_to_string(DASHBOARD).expect("read the dashboard");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every panel, those inside collapsed rows included, rows themselves too.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        all.push(panel);
        all.extend(panel["panels"].as_array().into_iter().flatten());
    }
    all
}

fn variables(dashboard: &Value) -> &Vec<Value> {
    dashboard["templating"]["list"]
        .as_array()
        .expect("templating.list")
}

/// A variable's query: a string, or the object newer Grafanas write.
fn variable_query(variable: &Value) -> &str {
    variable["query"]
        .as_str()
        .or_else(|| variable["query"]["query"].as_str())
        .unwrap_or_default()
}

/// Every query of the dashboard: where it is, its PromQL, its legend.
fn queries(dashboard: &Value) -> Vec<(String, &str, Option<&str>)> {
    let mut all = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let place = format!("panel {} query {}", panel["title"], target["refId"]);
            let legend = target["legendFormat"].as_str().filter(|l| *l != "__auto");
            all.push((place, target["expr"].as_str().unwrap_or_default(), legend));
        }
    }
    all
}

/// DB1–DB4 over the whole dashboard: what its queries and variables read,
/// against what `served` holds.
fn problems(dashboard: &Value, served: &Served) -> Vec<String> {
    let mut problems = Vec::new();
    for (place, expr, legend) in queries(dashboard) {
        check::query(served, expr, legend, &place, &mut problems);
    }
    for variable in variables(dashboard) {
        if variable["type"] == "query" {
            let place = format!("variable {}", variable["name"]);
            check::label_values(served, variable_query(variable), &place, &mut problems);
        }
    }
    problems
}

/// The series names `METRICS.md` promises, from its table: a histogram's
/// as `_bucket`.
fn documented_series() -> BTreeSet<String> {
    let text = std::fs::read_to_string(METRICS_MD).expect("read METRICS.md");
    text.lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix("| `")?.split('|');
            let name = cells.next()?.trim().trim_end_matches('`');
            let kind = cells.next()?.trim();
            match kind {
                "histogram" => Some(format!("{name}_bucket")),
                "counter" | "gauge" => Some(name.to_owned()),
                // The table of labels, not of metrics.
                _ => None,
            }
        })
        .collect()
}

// --- the live check ----------------------------------------------------------

/// How long the operator may take to start, join its ring and reconcile,
/// on a loaded machine.
const LIMIT: Duration = Duration::from_secs(60);

fn labelled(name: &str, namespace: Option<&str>, label: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        labels: Some([(label.to_owned(), "true".to_owned())].into()),
        ..Default::default()
    }
}

/// Whether the server holds the copy of `apps/a` in `t1`.
fn copied(server: &FakeApiServer) -> bool {
    server
        .objects::<ConfigMap>()
        .iter()
        .any(|cm| cm.namespace().as_deref() == Some("t1") && cm.name_any() == "apps.a")
}

// DB1, DB2, DB3, DB4
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db1_db4_every_query_reads_what_a_sharded_operator_serves() {
    let dashboard = dashboard();
    let server = FakeApiServer::start().await;
    server.register(&ResourceType::of::<Lease>());
    let labels = Labels::default();
    server
        .create(&Namespace {
            metadata: labelled("t1", None, &labels.target),
            ..Default::default()
        })
        .unwrap();
    server
        .create(&ConfigMap {
            metadata: labelled("a", Some("apps"), &labels.source),
            ..Default::default()
        })
        .unwrap();

    // The operator's sharded wiring, as `main` builds it with `--shard`.
    let ring = ShardArgs {
        ring: "mirror".into(),
        identity: "replica-0".into(),
        lease_namespace: "operators".into(),
    };
    let (shard, membership) = sharding::join(server.client(), &ring).unwrap();
    let operator = Operator::start(
        server.client(),
        labels,
        Duration::from_secs(300),
        Defaults::default(),
    )
    .await
    .unwrap();
    let stop = CancellationToken::new();
    let controller = operator
        .controller
        .with_config(kube_informer::controller::Config {
            concurrency: 2,
            ..Default::default()
        })
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .shard(shard.gate());
    let registry =
        controller::metrics_registry(&operator.informers, &controller, Some(shard.gate()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = tokio::spawn(metrics_http::serve(
        listener,
        Arc::new(registry),
        stop.clone(),
    ));
    let outcomes = controller.run_by_key(
        |key, source, mirror: Arc<Mirror>| async move { mirror.reconcile(&key, source).await },
        |_, _, _| Action::backoff(),
        Arc::new(operator.mirror),
    );
    let runner = tokio::spawn(outcomes.for_each(|_| ready(())));

    // Live: the replica owns the source and has mirrored it (watched for,
    // the limit only bounds a hang).
    let copies: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "t1");
    tokio::time::timeout(
        LIMIT,
        kube_runtime::wait::await_condition(copies, "apps.a", |copy: Option<&ConfigMap>| {
            copy.is_some()
        }),
    )
    .await
    .expect("the operator made no copy")
    .unwrap();
    assert!(copied(&server));
    let page = scrape(addr).await;
    let served = Served::new(&page.scrape);

    let names: BTreeSet<String> = served.names().map(str::to_owned).collect();
    let documented = documented_series();
    let unserved: Vec<&String> = documented.difference(&names).collect();
    assert!(
        unserved.is_empty(),
        "the scrape lacks families METRICS.md lists: {unserved:?}\n{}",
        page.text
    );

    let problems = problems(&dashboard, &served);
    assert!(
        problems.is_empty(),
        "the dashboard's queries do not fit what the exporter serves:\n{}",
        problems.join("\n")
    );

    // The same check, handed a query that reads a made-up metric, names it.
    let mut broken = dashboard.clone();
    broken["panels"][1]["targets"][0]["expr"] = Value::from(
        r#"sum by (informer) (rate(kube_informer_nonexistent_total{job=~"$job"}[$__rate_interval]))"#,
    );
    let problems = self::problems(&broken, &served);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("kube_informer_nonexistent_total is not served"),
        "{problems:?}"
    );

    stop.cancel();
    runner.await.unwrap();
    shard.stop();
    membership.await.unwrap().unwrap();
    operator.factory.shutdown().await;
    http.await.unwrap().unwrap();
}

// --- the dashboard's own form -------------------------------------------------

/// Variables Grafana defines itself.
fn builtin(variable: &str) -> bool {
    variable.starts_with("__")
}

/// The names of the variables `text` uses: `$name`, `${name}`, `${name:format}`.
fn variables_used(text: &str) -> Vec<String> {
    let mut used = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let braced = rest.starts_with('{');
        let name: String = rest
            .chars()
            .skip(usize::from(braced))
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        used.push(name);
    }
    used
}

// DB5
#[test]
fn db5_every_query_goes_to_the_datasource_variable_and_uses_defined_variables() {
    let dashboard = dashboard();
    let datasource = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});
    let defined: BTreeSet<&str> = variables(&dashboard)
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    let source = variables(&dashboard)
        .iter()
        .find(|v| v["name"] == "datasource")
        .expect("a datasource variable");
    assert_eq!(
        (&source["type"], &source["query"]),
        (&Value::from("datasource"), &Value::from("prometheus"))
    );

    let mut texts: Vec<(String, &str)> = Vec::new();
    for panel in panels(&dashboard)
        .into_iter()
        .filter(|p| p["type"] != "row")
    {
        assert_eq!(panel["datasource"], datasource, "panel {}", panel["title"]);
        for target in panel["targets"].as_array().expect("targets") {
            assert_eq!(target["datasource"], datasource, "panel {}", panel["title"]);
        }
    }
    for (place, expr, _) in queries(&dashboard) {
        texts.push((place, expr));
    }
    for variable in variables(&dashboard)
        .iter()
        .filter(|v| v["type"] == "query")
    {
        assert_eq!(
            variable["datasource"], datasource,
            "variable {}",
            variable["name"]
        );
        texts.push((
            format!("variable {}", variable["name"]),
            variable_query(variable),
        ));
    }
    for (place, text) in texts {
        for name in variables_used(text) {
            assert!(
                builtin(&name) || defined.contains(name.as_str()),
                "{place} uses ${name}, which the dashboard does not define"
            );
        }
    }
    // The dimensions the metrics carry can each be chosen.
    for name in [
        "informer",
        "group",
        "resource",
        "namespace",
        "subscriber",
        "controller",
    ] {
        assert!(defined.contains(name), "no variable {name}");
    }
}

// DB6
#[test]
fn db6_every_panel_says_which_question_it_answers_in_four_rows() {
    let dashboard = dashboard();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    let top = dashboard["panels"].as_array().unwrap();
    let rows: Vec<&str> = top
        .iter()
        .filter(|p| p["type"] == "row")
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ROWS);

    let mut ids = BTreeSet::new();
    let mut cells = BTreeSet::new();
    for panel in panels(&dashboard) {
        let title = &panel["title"];
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "panel {title}: id used twice"
        );
        let grid = &panel["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| grid[k].as_u64().unwrap());
        assert!(x + w <= 24, "panel {title} is wider than the grid");
        for cell in (x..x + w).flat_map(|c| (y..y + h).map(move |r| (c, r))) {
            assert!(
                cells.insert(cell),
                "panel {title} overlaps another at {cell:?}"
            );
        }
        if panel["type"] == "row" {
            continue;
        }
        let description = panel["description"].as_str().unwrap_or_default();
        let question = description.split_inclusive('?').next().unwrap_or_default();
        assert!(
            question.ends_with('?') && !question.contains(". "),
            "panel {title}: the description should open with its question: {description:?}"
        );
    }
}

// --- the check itself, on a scrape written by hand ------------------------------

const SCRAPE: &str = r#"# HELP kube_informer_errors Every error the informer met.
# TYPE kube_informer_errors counter
kube_informer_errors_total{informer="pods",resource="pods"} 3
# HELP kube_informer_subscription_pending Notifications queued.
# TYPE kube_informer_subscription_pending gauge
kube_informer_subscription_pending{informer="pods",resource="pods",subscriber="a"} 2
# HELP workqueue_queue_duration_seconds Time from an add to its hand-out.
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="q",le="0.1"} 1
workqueue_queue_duration_seconds_bucket{name="q",le="+Inf"} 2
workqueue_queue_duration_seconds_sum{name="q"} 0.3
workqueue_queue_duration_seconds_count{name="q"} 2
"#;

fn check(expr: &str, legend: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    check::query(&Served::parse(SCRAPE), expr, legend, "q", &mut problems);
    problems
}

// DB1
#[test]
fn db1_a_metric_the_scrape_lacks_is_named_and_nothing_else_is() {
    let good = r#"sum by (informer) (rate(kube_informer_errors_total{job=~"$job", informer=~"$informer"}[$__rate_interval]))"#;
    assert_eq!(check(good, Some("{{informer}}")), Vec::<String>::new());

    let made_up = format!(
        "{} / sum by (informer) (rate(kube_informer_nonexistent_total[$__rate_interval]))",
        good
    );
    assert_eq!(
        check(&made_up, None),
        ["q: kube_informer_nonexistent_total is not served"]
    );
}

// DB1
#[test]
fn db1_a_histogram_is_served_as_bucket_sum_and_count_not_by_its_name() {
    for served in ["_bucket", "_sum", "_count"] {
        let expr = format!("sum by (name) (rate(workqueue_queue_duration_seconds{served}[5m]))");
        assert_eq!(check(&expr, None), Vec::<String>::new(), "{expr}");
    }
    let problems = check("rate(workqueue_queue_duration_seconds[5m])", None);
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("is a histogram: query workqueue_queue_duration_seconds_bucket"));
}

// DB2
#[test]
fn db2_a_label_the_series_lacks_is_named_in_matchers_groupings_and_variables() {
    assert_eq!(
        check(r#"kube_informer_errors_total{subscriber="a"}"#, None),
        ["q: kube_informer_errors_total has no label `subscriber` to match on"]
    );
    assert_eq!(
        check("sum by (subscriber) (kube_informer_errors_total)", None),
        ["q: sum by (subscriber): kube_informer_errors_total has no label `subscriber`"]
    );
    // A label an inner aggregation dropped is gone for the outer one.
    assert_eq!(
        check(
            "max by (subscriber) (sum by (informer) (kube_informer_subscription_pending))",
            None
        )
        .len(),
        1
    );
    let served = Served::parse(SCRAPE);
    let mut problems = Vec::new();
    check::label_values(
        &served,
        r#"label_values(kube_informer_errors_total{instance=~"$i"}, job)"#,
        "v",
        &mut problems,
    );
    assert_eq!(problems, Vec::<String>::new());
    check::label_values(
        &served,
        "label_values(kube_informer_errors_total, subscriber)",
        "v",
        &mut problems,
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
}

// DB3
#[test]
fn db3_a_quantile_without_le_and_sides_that_cannot_pair_are_named() {
    let quantile = |by: &str| {
        check(
            &format!(
                "histogram_quantile(0.99, sum by ({by}) (rate(workqueue_queue_duration_seconds_bucket[5m])))"
            ),
            Some("{{name}}"),
        )
    };
    assert_eq!(quantile("le, name"), Vec::<String>::new());
    let problems = quantile("name");
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].contains("`le` was aggregated away"),
        "{problems:?}"
    );

    let ratio = |left: &str, right: &str| {
        check(
            &format!(
                "sum by ({left}) (kube_informer_subscription_pending) / sum by ({right}) (kube_informer_errors_total)"
            ),
            None,
        )
    };
    assert_eq!(ratio("informer", "informer"), Vec::<String>::new());
    assert_eq!(ratio("informer, subscriber", "informer").len(), 1);
    assert_eq!(
        check(
            "sum by (informer, subscriber) (kube_informer_subscription_pending) / on (informer) group_left sum by (informer) (kube_informer_errors_total)",
            Some("{{subscriber}}")
        ),
        Vec::<String>::new()
    );
}

// DB4
#[test]
fn db4_a_legend_naming_a_label_the_result_lacks_is_named() {
    let expr = "sum by (informer) (kube_informer_subscription_pending)";
    assert_eq!(
        check(expr, Some("{{informer}} pending")),
        Vec::<String>::new()
    );
    assert_eq!(
        check(expr, Some("{{ informer }}/{{subscriber}}")),
        [r#"q: legend names `subscriber`, which the result (labels {"informer"}) does not have"#]
    );
}
