//! Which part of an object a write may change: the object through its own
//! URL, or its `status` through `…/NAME/status`.
//!
//! # Rules
//!
//! - SS1: for a kind with a `/status` subresource, a write of the object
//!   keeps the stored `status` (a created object starts without one).
//! - SS2: a write of `…/status` changes `status` alone: everything else in
//!   the body (spec, labels, annotations, finalizers, …) is ignored.
//! - SS3: `…/status` of a kind without that subresource, or any other
//!   subresource, is 404 `NotFound`; a missing object is 404 with its name.

use serde_json::Value;

use crate::{field_set::Scope, resource::ResourceType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Main,
    Status,
}

impl Target {
    /// The `subresource` a managedFields entry names.
    pub(super) fn subresource(self) -> &'static str {
        match self {
            Self::Main => "",
            Self::Status => "status",
        }
    }

    /// The fields a manager of this write can own.
    pub(super) fn scope(self, rt: &ResourceType) -> Scope {
        match self {
            Self::Main => Scope::Main {
                without_status: rt.status_subresource,
            },
            Self::Status => Scope::Status,
        }
    }

    /// `candidate` cut down to what this write may change of `current`
    /// (SS1, SS2); `None` for a creation.
    pub(super) fn confine(
        self,
        rt: &ResourceType,
        current: Option<&Value>,
        candidate: Value,
    ) -> Value {
        match (self, current) {
            (Self::Main, _) if !rt.status_subresource => candidate,
            (Self::Main, current) => {
                let mut object = candidate;
                set_status(&mut object, current.and_then(|c| c.get("status")).cloned());
                object
            }
            (Self::Status, None) => candidate,
            (Self::Status, Some(current)) => {
                let mut object = current.clone();
                set_status(&mut object, candidate.get("status").cloned());
                object
            }
        }
    }
}

fn set_status(object: &mut Value, status: Option<Value>) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    match status {
        Some(status) => {
            map.insert("status".to_owned(), status);
        }
        None => {
            map.remove("status");
        }
    }
}
