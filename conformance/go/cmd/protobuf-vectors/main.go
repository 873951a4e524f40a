// Command protobuf-vectors writes the test vectors of kube-informer's
// protobuf decoder (tests/protobuf-vectors/): for each object, NAME.pb is
// the body kube-apiserver sends for it as application/vnd.kubernetes.protobuf
// (the magic k8s\0, then a runtime.Unknown envelope, written by
// apimachinery's protobuf serializer) and NAME.json the JSON of the same
// object after a protobuf round trip, which is what kube-apiserver serves as
// JSON for an object it keeps in etcd as protobuf.
//
// wire/ holds the other bodies a protobuf client reads: a list page
// (podlist), error Status bodies (status-403, status-410, status-429) and a
// watch stream (watch.pb: frames of a 4-byte big-endian length and a
// WatchEvent, written as kube-apiserver's watch handler writes them; and
// watch.json: the same events as a JSON array of {type, object}).
//
//	protobuf-vectors DIR
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: protobuf-vectors DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme,
		eventsv1.AddToScheme, certificatesv1.AddToScheme,
	} {
		must(add(scheme))
	}
	pb := protobuf.NewSerializer(scheme, scheme)

	for _, v := range vectors() {
		gvks, _, err := scheme.ObjectKinds(v.object)
		must(err)
		v.object.GetObjectKind().SetGroupVersionKind(gvks[0])
		var body bytes.Buffer
		must(pb.Encode(v.object, &body))

		// What kube-apiserver serves as JSON: the object as protobuf gave it back.
		back, err := scheme.New(gvks[0])
		must(err)
		decoded, _, err := pb.Decode(body.Bytes(), nil, back)
		must(err)
		decoded.GetObjectKind().SetGroupVersionKind(gvks[0])
		text, err := json.MarshalIndent(decoded, "", " ")
		must(err)

		must(os.WriteFile(filepath.Join(dir, v.name+".pb"), body.Bytes(), 0o644))
		must(os.WriteFile(filepath.Join(dir, v.name+".json"), append(text, '\n'), 0o644))
	}

	wire := filepath.Join(dir, "wire")
	must(os.MkdirAll(wire, 0o755))
	for _, v := range wireVectors() {
		body, back := roundTrip(scheme, pb, v.object)
		text, err := json.MarshalIndent(back, "", " ")
		must(err)
		must(os.WriteFile(filepath.Join(wire, v.name+".pb"), body, 0o644))
		must(os.WriteFile(filepath.Join(wire, v.name+".json"), append(text, '\n'), 0o644))
	}
	writeWatch(scheme, pb, wire)
}

// roundTrip encodes an object as kube-apiserver does (k8s\0 and the Unknown
// envelope) and decodes it back, as its JSON is served.
func roundTrip(scheme *runtime.Scheme, pb *protobuf.Serializer, object runtime.Object) ([]byte, runtime.Object) {
	gvks, _, err := scheme.ObjectKinds(object)
	must(err)
	object.GetObjectKind().SetGroupVersionKind(gvks[0])
	var body bytes.Buffer
	must(pb.Encode(object, &body))
	back, err := scheme.New(gvks[0])
	must(err)
	decoded, _, err := pb.Decode(body.Bytes(), nil, back)
	must(err)
	decoded.GetObjectKind().SetGroupVersionKind(gvks[0])
	return body.Bytes(), decoded
}

func wireVectors() []vector {
	minimal := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "minimal", Namespace: "production", ResourceVersion: "100040"}}
	return []vector{
		{"podlist", &corev1.PodList{
			ListMeta: metav1.ListMeta{ResourceVersion: "100042", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTAwMDQyfQ",
				RemainingItemCount: ptr(int64(17))},
			Items: []corev1.Pod{*pod(), minimal},
		}},
		{"podlist-empty", &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}},
		{"status-403", &metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "production"`,
			Details: &metav1.StatusDetails{Kind: "pods"}}},
		{"status-410", &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
			Message: "too old resource version: 100 (100042)"}},
		{"status-429", &metav1.Status{Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests,
			Message: "storage is (re)initializing",
			Details: &metav1.StatusDetails{RetryAfterSeconds: 1, Causes: []metav1.StatusCause{
				{Type: "Throttled", Message: "the server has received too many requests"}}}}},
	}
}

// writeWatch writes a watch stream as kube-apiserver's watch handler does
// for protobuf: each event's object through the enveloping serializer into
// a RawExtension, the WatchEvent through the raw serializer, each frame
// behind a 4-byte big-endian length.
func writeWatch(scheme *runtime.Scheme, pb *protobuf.Serializer, dir string) {
	modified := pod()
	modified.ResourceVersion = "100043"
	modified.Labels["tier"] = "backend"
	deleted := pod()
	deleted.ResourceVersion = "100044"
	deleted.DeletionTimestamp = &later
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "100050",
		Annotations: map[string]string{"k8s.io/initial-events-end": "true"}}}
	plainBookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "100051"}}
	expired := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired,
		Message: "too old resource version: 100 (100042)"}
	events := []struct {
		kind   string
		object runtime.Object
	}{
		{"ADDED", pod()}, {"MODIFIED", modified}, {"DELETED", deleted},
		{"BOOKMARK", bookmark}, {"BOOKMARK", plainBookmark}, {"ERROR", expired},
	}

	var stream bytes.Buffer
	encoder := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(&stream), protobuf.NewRawSerializer(scheme, scheme))
	var asJSON []map[string]any
	for _, e := range events {
		body, back := roundTrip(scheme, pb, e.object)
		must(encoder.Encode(&metav1.WatchEvent{Type: e.kind, Object: runtime.RawExtension{Raw: body}}))
		text, err := json.Marshal(back)
		must(err)
		asJSON = append(asJSON, map[string]any{"type": e.kind, "object": json.RawMessage(text)})
	}
	text, err := json.MarshalIndent(asJSON, "", " ")
	must(err)
	must(os.WriteFile(filepath.Join(dir, "watch.pb"), stream.Bytes(), 0o644))
	must(os.WriteFile(filepath.Join(dir, "watch.json"), append(text, '\n'), 0o644))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "protobuf-vectors:", err)
		os.Exit(1)
	}
}

type vector struct {
	name   string
	object runtime.Object
}

func ptr[T any](v T) *T { return &v }

var (
	created = metav1.NewTime(time.Date(2026, 11, 30, 12, 34, 56, 0, time.UTC))
	later   = metav1.NewTime(time.Date(2026, 11, 30, 12, 35, 10, 0, time.UTC))
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "production", UID: "3f9a1c2e-5b7d-4e8f-9a0b-000000000001",
		ResourceVersion: "100001", Generation: 3, CreationTimestamp: created,
		Labels:      map[string]string{"app": "web", "tier": "frontend"},
		Annotations: map[string]string{"note": "a\xffb", "empty": ""},
	}
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "true"}}},
		Containers: []corev1.Container{{
			Name: "web", Image: "registry.example/web:v1.42.0", Args: []string{"--port=8080", ""},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "EMPTY"},
				{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password", Optional: ptr(false)}}},
			},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("0.25"), corev1.ResourceMemory: q("128M")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}},
			LivenessProbe: &corev1.Probe{
				ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
				InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
			SecurityContext: &corev1.SecurityContext{
				RunAsNonRoot: ptr(true), AllowPrivilegeEscalation: ptr(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
			TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent,
		}},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}, DefaultMode: ptr(int32(0o644)),
				Items: []corev1.KeyToPath{{Key: "app.yaml", Path: "app.yaml"}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(q("1Gi"))}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}},
		},
		RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr(int64(30)),
		DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "web", NodeName: "node-1",
		HostNetwork: false, EnableServiceLinks: ptr(false), Priority: ptr(int32(-5)),
		SecurityContext:  &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), FSGroup: ptr(int64(2000)), SupplementalGroups: []int64{4000, 5000, -1}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		SchedulerName:    "default-scheduler",
		Tolerations: []corev1.Toleration{
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule},
		},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}}}}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
		},
	}
}

func pod() *corev1.Pod {
	m := meta("web-7d4b9c8f6d-x2x9z")
	m.GenerateName = "web-7d4b9c8f6d-"
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d",
		UID: "8c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	m.Finalizers = []string{"example.com/cleanup"}
	m.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}`)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &later,
			FieldsType: "FieldsV1", Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{},"f:podIP":{}}}`)}},
	}
	return &corev1.Pod{
		ObjectMeta: m,
		Spec:       podSpec(),
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.11", PodIP: "10.244.1.17",
			PodIPs: []corev1.PodIP{{IP: "10.244.1.17"}, {IP: "fd00::17"}}, StartTime: &created, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: later},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created, LastProbeTime: metav1.Time{}},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "web", Ready: true, RestartCount: 2, Image: "registry.example/web:v1.42.0", ImageID: "registry.example/web@sha256:0123",
				ContainerID: "containerd://abc", Started: ptr(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: later}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: -1, Reason: "Error", StartedAt: created, FinishedAt: later}},
			}},
			EphemeralContainerStatuses: nil,
		},
	}
}

func vectors() []vector {
	subSecond := pod()
	subSecond.Name = "sub-second"
	subSecond.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 30, 12, 34, 56, 987654321, time.UTC))
	subSecond.DeletionTimestamp = ptr(metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 1, time.UTC)))
	subSecond.DeletionGracePeriodSeconds = ptr(int64(0))
	subSecond.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Stdin: true, TTY: true},
		TargetContainerName:      "web",
	}}

	minimal := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "minimal"}}

	return []vector{
		{"pod", pod()},
		{"pod-sub-second", subSecond},
		{"pod-minimal", minimal},
		{"configmap", &corev1.ConfigMap{
			ObjectMeta: meta("web-config"),
			Data:       map[string]string{"app.yaml": "port: 8080\n", "empty": "", "ünïcode": "✓"},
			BinaryData: map[string][]byte{"blob": {0, 1, 2, 0xfe, 0xff}, "none": {}},
			Immutable:  ptr(true),
		}},
		{"secret", &corev1.Secret{
			ObjectMeta: meta("db"),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"password": []byte("hunter2"), "key": {0x80, 0x81}},
		}},
		{"service", &corev1.Service{
			ObjectMeta: meta("web"),
			Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20", "fd00::20"},
				Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{
					{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
					{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090), NodePort: 31090},
				},
				SessionAffinity:       corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(10800))}},
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
				IPFamilyPolicy:        ptr(corev1.IPFamilyPolicyPreferDualStack),
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 32000,
				AllocateLoadBalancerNodePorts: ptr(true),
			},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
				{IP: "203.0.113.10", Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}}}},
		}},
		{"deployment", &appsv1.Deployment{
			ObjectMeta: meta("web"),
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(3)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"frontend"}}}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec()},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr(intstr.FromString("25%")), MaxUnavailable: ptr(intstr.FromInt32(0))}},
				RevisionHistoryLimit: ptr(int32(10)), ProgressDeadlineSeconds: ptr(int32(600)),
			},
			Status: appsv1.DeploymentStatus{
				ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
					LastUpdateTime: later, LastTransitionTime: created, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}},
			},
		}},
		{"node", &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "n-1", ResourceVersion: "7", CreationTimestamp: created,
				Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
			Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:1::/64"}, ProviderID: "kind://node-1",
				Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &later}}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: q("8"), corev1.ResourceMemory: q("32874500Ki"), corev1.ResourcePods: q("110"), "hugepages-2Mi": q("0")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("7800m"), corev1.ResourceMemory: q("31.5Gi"), corev1.ResourcePods: q("110")},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: later,
					LastTransitionTime: created, Reason: "KubeletReady", Message: "kubelet is posting ready status"}},
				Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}, {Type: corev1.NodeHostName, Address: "node-1"}},
				DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
				NodeInfo: corev1.NodeSystemInfo{MachineID: "m", KernelVersion: "6.8.0", OSImage: "Debian", ContainerRuntimeVersion: "containerd://2.0.0",
					KubeletVersion: "v1.34.1", OperatingSystem: "linux", Architecture: "amd64"},
				Images: []corev1.ContainerImage{{Names: []string{"registry.example/web@sha256:0123", "registry.example/web:v1.42.0"}, SizeBytes: 123456789012}},
			},
		}},
		{"lease", &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system", ResourceVersion: "42"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr("node-1_3f9a"), LeaseDurationSeconds: ptr(int32(15)), LeaseTransitions: ptr(int32(0)),
				AcquireTime: ptr(metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC))),
				RenewTime:   ptr(metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 34, 56, 999, time.UTC))),
			},
		}},
		{"event", &eventsv1.Event{
			ObjectMeta:          meta("web.1873a"),
			EventTime:           metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 34, 57, 5_000, time.UTC)),
			Series:              &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 40, 0, 250_000_000, time.UTC))},
			ReportingController: "kubelet", ReportingInstance: "node-1", Action: "Pulling", Reason: "BackOff",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "production", Name: "web-7d4b9c8f6d-x2x9z", UID: "3f9a", APIVersion: "v1", FieldPath: "spec.containers{web}"},
			Note:      "Back-off pulling image", Type: corev1.EventTypeWarning,
			DeprecatedFirstTimestamp: created, DeprecatedCount: 4,
		}},
		{"core-event", &corev1.Event{
			ObjectMeta:     meta("web.1873b"),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "production", Name: "web"},
			Reason:         "Started", Message: "Started container web", Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: created, LastTimestamp: later, Count: 1, Type: corev1.EventTypeNormal,
			EventTime: metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 34, 57, 1_500, time.UTC)),
			Series:    &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 35, 0, 0, time.UTC))},
		}},
		{"controllerrevision", &appsv1.ControllerRevision{
			ObjectMeta: meta("web-7d4b9c8f6d"),
			Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"web","image":"web:1"}]}}}}`)},
			Revision:   7,
		}},
		{"csr", &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "csr-1", CreationTimestamp: created},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: []byte("-----BEGIN CERTIFICATE REQUEST-----\n\x00\x01\n"), SignerName: "kubernetes.io/kube-apiserver-client",
				ExpirationSeconds: ptr(int32(86400)), Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
				Username: "alice", Groups: []string{"system:authenticated"},
				Extra: map[string]certificatesv1.ExtraValue{"scopes": {"a", "b"}, "none": {}},
			},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, LastUpdateTime: later, LastTransitionTime: later}}},
		}},
		{"persistentvolume", &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: q("10Gi")},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr(corev1.HostPathDirectoryOrCreate)}},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				ClaimRef:                      &corev1.ObjectReference{Namespace: "production", Name: "data"},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, VolumeMode: ptr(corev1.PersistentVolumeFilesystem),
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, LastPhaseTransitionTime: &created},
		}},
	}
}
