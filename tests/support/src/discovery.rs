//! API discovery: what `kubectl` and kube's `Discovery` ask before they
//! talk to resources they know only by group and kind.
//!
//! Rules (each test names the one it checks):
//! - D1: `GET /api` answers `APIVersions` (`v1`), `GET /api/v1` an
//!   `APIResourceList` of the core resources the server knows.
//! - D2: `GET /apis` answers an `APIGroupList` with every group the server
//!   knows (built-in groups first, then the groups of CRDs, each part by
//!   name), each group's versions in Kubernetes' version priority (GA before
//!   beta before alpha, higher numbers first) and the first as
//!   `preferredVersion`; `GET /apis/<group>` answers that one `APIGroup`.
//! - D3: `GET /apis/<group>/<version>` answers an `APIResourceList`: for a
//!   CRD version its plural, singular, kind, scope, short names, categories
//!   and the verbs the API server lists, with `<plural>/status` and
//!   `<plural>/scale` (kind `Scale` of `autoscaling/v1`) when the version has
//!   those subresources. A group or version nobody serves is 404.
//!
//! Resources known without a CRD (built-in types, and types made known by
//! `register` or a first write) are listed with the kind the server was
//! given and a singular name that is the lowercased kind.

use std::collections::BTreeMap;

use axum::{
    http::{HeaderMap, Method, header},
    response::Response,
};
use serde_json::{Value, json};

use crate::{
    crd::{Definition, definitions},
    faults::ApiStatus,
    http::{json_response, status_response},
    store::State,
};

/// One resource as discovery lists it.
#[derive(Debug, Clone)]
struct Listed {
    plural: String,
    singular: String,
    kind: String,
    namespaced: bool,
    short_names: Vec<String>,
    categories: Vec<String>,
    status: bool,
    scale: bool,
    from_crd: bool,
}

/// group → version → resources, every level in a fixed order.
type Catalogue = BTreeMap<String, BTreeMap<String, Vec<Listed>>>;

fn catalogue(state: &State) -> Catalogue {
    let mut catalogue = Catalogue::new();
    let crds: Vec<Definition> = definitions(state);
    for d in &crds {
        for v in d.versions.iter().filter(|v| v.served) {
            catalogue
                .entry(d.group.clone())
                .or_default()
                .entry(v.name.clone())
                .or_default()
                .push(Listed {
                    plural: d.plural.clone(),
                    singular: d.singular.clone(),
                    kind: d.kind.clone(),
                    namespaced: d.namespaced,
                    short_names: d.short_names.clone(),
                    categories: d.categories.clone(),
                    status: v.status,
                    scale: v.scale,
                    from_crd: true,
                });
        }
    }
    for (id, collection) in &state.collections {
        let defined = crds
            .iter()
            .any(|d| d.group == id.group && d.plural == id.plural);
        if defined {
            continue; // served as its CRD says (its storage version may not be served)
        }
        catalogue
            .entry(id.group.clone())
            .or_default()
            .entry(id.version.clone())
            .or_default()
            .push(Listed {
                plural: id.plural.clone(),
                singular: collection.kind.to_lowercase(),
                kind: collection.kind.clone(),
                namespaced: collection.namespaced,
                short_names: Vec::new(),
                categories: Vec::new(),
                status: false,
                scale: false,
                from_crd: false,
            });
    }
    for versions in catalogue.values_mut() {
        for resources in versions.values_mut() {
            resources.sort_by(|a, b| a.plural.cmp(&b.plural));
        }
    }
    catalogue
}

/// Kubernetes' version priority as a sort key: `v2` before `v1` before
/// `v1beta2` before `v1beta1` before `v1alpha1`, then anything else by name.
fn priority(version: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        match &rest[digits..] {
            "" => Some((0, major, 0)),
            tail => {
                let (tier, number) = if let Some(n) = tail.strip_prefix("beta") {
                    (1, n)
                } else {
                    (2, tail.strip_prefix("alpha")?)
                };
                Some((tier, major, number.parse().ok()?))
            }
        }
    });
    match parsed {
        Some((tier, major, minor)) => (tier, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), version.to_owned()),
    }
}

fn group_json(group: &str, versions: &BTreeMap<String, Vec<Listed>>) -> Value {
    let mut names: Vec<&String> = versions.keys().collect();
    names.sort_by_key(|v| priority(v));
    let entry = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": names.iter().map(|v| entry(v)).collect::<Vec<_>>(),
        "preferredVersion": names.first().map(|v| entry(v)),
    })
}

fn resource_list(group_version: &str, resources: &[Listed], core: bool) -> Value {
    let mut listed = Vec::new();
    for r in resources {
        let verbs: &[&str] = if r.from_crd {
            &[
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        };
        let mut entry = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": verbs,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        listed.push(entry);
        let sub = |name: &str, kind: &str| {
            json!({
                "name": format!("{}/{name}", r.plural), "singularName": "",
                "namespaced": r.namespaced, "kind": kind, "verbs": ["get", "patch", "update"],
            })
        };
        if r.status {
            listed.push(sub("status", &r.kind));
        }
        if r.scale {
            let mut scale = sub("scale", "Scale");
            scale["group"] = json!("autoscaling");
            scale["version"] = json!("v1");
            listed.push(scale);
        }
    }
    let mut list =
        json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": listed});
    if !core {
        list["apiVersion"] = json!("v1");
    }
    list
}

fn page_not_found() -> Response {
    status_response(&ApiStatus::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    ))
}

/// Answers a discovery request, or `None` when `path` is not one.
pub(crate) fn serve(
    state: &State,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<Response> {
    if *method != Method::GET {
        return None;
    }
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut catalogue = catalogue(state);
    let core = catalogue.remove("").unwrap_or_default();
    let answer = match parts.as_slice() {
        ["api"] => {
            let address = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("127.0.0.1");
            json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
            })
        }
        ["api", version] => match core.get(*version) {
            Some(resources) => resource_list(version, resources, true),
            None => return Some(page_not_found()),
        },
        ["apis"] => {
            let crd_groups: Vec<String> = definitions(state).into_iter().map(|d| d.group).collect();
            let (custom, built_in): (Vec<_>, Vec<_>) =
                catalogue.iter().partition(|(g, _)| crd_groups.contains(g));
            let groups: Vec<Value> = built_in
                .into_iter()
                .chain(custom)
                .map(|(g, versions)| group_json(g, versions))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        ["apis", group] => match catalogue.get(*group) {
            Some(versions) => {
                let mut group = group_json(group, versions);
                group["kind"] = json!("APIGroup");
                group["apiVersion"] = json!("v1");
                group
            }
            None => return Some(page_not_found()),
        },
        ["apis", group, version] => match catalogue.get(*group).and_then(|v| v.get(*version)) {
            Some(resources) => resource_list(&format!("{group}/{version}"), resources, false),
            None => return Some(page_not_found()),
        },
        _ => return None,
    };
    Some(json_response(&answer))
}

#[cfg(test)]
mod tests {
    use super::priority;

    #[test]
    fn d2_versions_sort_by_kubernetes_priority() {
        let mut versions = vec!["v1alpha1", "v1beta1", "foo", "v1", "v2", "v1beta2", "v10"];
        versions.sort_by_key(|v| priority(v));
        assert_eq!(
            versions,
            ["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }
}
