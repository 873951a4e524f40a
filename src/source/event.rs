//! What the source emits.

/// One thing the list/watch source learned from the API server.
///
/// Live changes arrive as [`Added`](Event::Added), [`Modified`](Event::Modified)
/// and [`Deleted`](Event::Deleted). A relist (the first list, and every list
/// after a failure) arrives as [`ListStart`](Event::ListStart), then one
/// [`Listed`](Event::Listed) per object as it is received, then
/// [`ListDone`](Event::ListDone); the objects listed between the two are the
/// whole state at that resourceVersion, so whatever a consumer holds that was
/// not listed is gone.
///
/// A relist can be cut short by an error: then no `ListDone` follows, and a
/// later `ListStart` begins a new relist from scratch. Consumers should treat
/// a `ListStart` while a relist is open as "forget the open relist's
/// membership and start again" (the objects it delivered were still real
/// states and may be kept).
///
/// # Examples
///
/// Folding events into a map of name → object:
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_informer::source::Event;
///
/// fn apply(map: &mut BTreeMap<String, u32>, relist: &mut Option<BTreeMap<String, u32>>, event: Event<(String, u32)>) {
///     match event {
///         Event::Added((k, v)) | Event::Modified((k, v)) => { map.insert(k, v); }
///         Event::Deleted((k, _)) => { map.remove(&k); }
///         Event::ListStart => *relist = Some(BTreeMap::new()),
///         Event::Listed((k, v)) => { relist.get_or_insert_with(BTreeMap::new).insert(k, v); }
///         Event::ListDone { .. } => *map = relist.take().unwrap_or_default(),
///         Event::Bookmark { .. } => {}
///     }
/// }
///
/// let mut map = BTreeMap::new();
/// let mut relist = None;
/// for event in [
///     Event::ListStart,
///     Event::Listed(("a".to_string(), 1)),
///     Event::ListDone { resource_version: "10".into() },
///     Event::Modified(("a".to_string(), 2)),
/// ] {
///     apply(&mut map, &mut relist, event);
/// }
/// assert_eq!(map["a"], 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Event<K> {
    /// A watch reported a new object.
    Added(K),
    /// A watch reported a changed object.
    Modified(K),
    /// A watch reported a deleted object (its last state).
    Deleted(K),
    /// The server's progress marker: nothing before this resourceVersion is
    /// left to deliver. It changes no object.
    Bookmark {
        /// The resourceVersion the watch has reached.
        resource_version: String,
    },
    /// A relist begins (paginated or streaming).
    ListStart,
    /// One object of the relist, as it arrives.
    Listed(K),
    /// The relist is complete: the objects listed since the last
    /// [`ListStart`](Event::ListStart) are the whole state at this resourceVersion.
    ListDone {
        /// The resourceVersion of the list.
        resource_version: String,
    },
}

impl<K> Event<K> {
    /// The object this event carries, if any.
    ///
    /// ```
    /// use kube_informer::source::Event;
    /// assert_eq!(Event::Added(1).object(), Some(&1));
    /// assert_eq!(Event::<u8>::ListStart.object(), None);
    /// ```
    pub fn object(&self) -> Option<&K> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) | Self::Listed(o) => Some(o),
            Self::Bookmark { .. } | Self::ListStart | Self::ListDone { .. } => None,
        }
    }

    /// Applies `f` to the carried object, keeping the event's shape.
    ///
    /// ```
    /// use kube_informer::source::Event;
    /// assert_eq!(Event::Listed(2).map(|n| n * 10), Event::Listed(20));
    /// ```
    pub fn map<U>(self, f: impl FnOnce(K) -> U) -> Event<U> {
        match self {
            Self::Added(o) => Event::Added(f(o)),
            Self::Modified(o) => Event::Modified(f(o)),
            Self::Deleted(o) => Event::Deleted(f(o)),
            Self::Listed(o) => Event::Listed(f(o)),
            Self::Bookmark { resource_version } => Event::Bookmark { resource_version },
            Self::ListStart => Event::ListStart,
            Self::ListDone { resource_version } => Event::ListDone { resource_version },
        }
    }
}
