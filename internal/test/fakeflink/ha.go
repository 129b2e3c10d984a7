package fakeflink

import (
	"context"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// HAStore is where the fake keeps Flink's Kubernetes HA ConfigMaps: a real API server in
// tests of the controller (KubeHA), a map in fast tests of the fake itself (MemoryHA). The
// ConfigMaps have the names, labels, annotation and keys Flink writes (package flinkha).
type HAStore interface {
	// Get returns a ConfigMap, or nil (and no error) when it does not exist.
	Get(ctx context.Context, name string) (*corev1.ConfigMap, error)
	// Put creates or replaces a ConfigMap.
	Put(ctx context.Context, cm *corev1.ConfigMap) error
	// Delete removes a ConfigMap; a missing one is not an error.
	Delete(ctx context.Context, name string) error
	// DeleteAll removes every HA ConfigMap of a cluster (by Flink's labels), as Flink's HA
	// cleanup does.
	DeleteAll(ctx context.Context, clusterID string) error
	// List returns the names of a cluster's HA ConfigMaps, sorted.
	List(ctx context.Context, clusterID string) ([]string, error)
}

// MemoryHA is an HAStore in memory. The zero value is ready to use.
type MemoryHA struct {
	mu  sync.Mutex
	cms map[string]*corev1.ConfigMap
}

var _ HAStore = &MemoryHA{}

// Get implements HAStore.
func (m *MemoryHA) Get(_ context.Context, name string) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cm, ok := m.cms[name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, nil
}

// Put implements HAStore.
func (m *MemoryHA) Put(_ context.Context, cm *corev1.ConfigMap) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cms == nil {
		m.cms = map[string]*corev1.ConfigMap{}
	}
	m.cms[cm.Name] = cm.DeepCopy()
	return nil
}

// Delete implements HAStore.
func (m *MemoryHA) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cms, name)
	return nil
}

// DeleteAll implements HAStore.
func (m *MemoryHA) DeleteAll(_ context.Context, clusterID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.cms, func(_ string, cm *corev1.ConfigMap) bool { return flinkha.IsHAConfigMap(cm, clusterID) })
	return nil
}

// List implements HAStore.
func (m *MemoryHA) List(_ context.Context, clusterID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name, cm := range m.cms {
		if flinkha.IsHAConfigMap(cm, clusterID) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// KubeHA keeps the HA ConfigMaps in a namespace of a real API server, through a
// controller-runtime client, so that the controller under test reads what Flink would write.
type KubeHA struct {
	Client    client.Client
	Namespace string
}

var _ HAStore = &KubeHA{}

// Get implements HAStore.
func (k *KubeHA) Get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := k.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// Put implements HAStore: an update of the version last read (cm's resourceVersion), or a
// create when cm has none. Flink writes so (a read, then a replace of what it read: its
// leader elector's renewal, KubernetesStateHandleStore's edits), two requests, not three.
// When the ConfigMap changed, appeared or went since it was read, cm is written over what
// is there now: the fake keeps its own record of what it wrote.
func (k *KubeHA) Put(ctx context.Context, cm *corev1.ConfigMap) error {
	cm = cm.DeepCopy()
	cm.Namespace = k.Namespace
	if cm.ResourceVersion == "" {
		if err := k.Client.Create(ctx, cm); !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err := k.Client.Update(ctx, cm); !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return err
	}
	cur := &corev1.ConfigMap{}
	err := k.Client.Get(ctx, client.ObjectKeyFromObject(cm), cur)
	if apierrors.IsNotFound(err) {
		cm.ResourceVersion, cm.UID = "", ""
		return k.Client.Create(ctx, cm)
	}
	if err != nil {
		return err
	}
	cm.ResourceVersion = cur.ResourceVersion
	cm.UID = cur.UID
	return k.Client.Update(ctx, cm)
}

// Delete implements HAStore.
func (k *KubeHA) Delete(ctx context.Context, name string) error {
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = k.Namespace, name
	return client.IgnoreNotFound(k.Client.Delete(ctx, cm))
}

// DeleteAll implements HAStore.
func (k *KubeHA) DeleteAll(ctx context.Context, clusterID string) error {
	return k.Client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(k.Namespace), client.MatchingLabels(flinkha.Labels(clusterID)))
}

// List implements HAStore.
func (k *KubeHA) List(ctx context.Context, clusterID string) ([]string, error) {
	list := &corev1.ConfigMapList{}
	if err := k.Client.List(ctx, list, client.InNamespace(k.Namespace), client.MatchingLabels(flinkha.Labels(clusterID))); err != nil {
		return nil, err
	}
	var names []string
	for _, cm := range list.Items {
		if cm.DeletionTimestamp == nil {
			names = append(names, cm.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// haConfigMap is a new HA ConfigMap labelled as the cluster's release labels it: Flink 1.x
// adds configmap-type (KubernetesHaServices), Flink 2 does not.
func (c *Cluster) haConfigMap(name string) *corev1.ConfigMap {
	cm := flinkha.NewConfigMap("", name, c.opts.ClusterID)
	if c.opts.Version == Version1_20 {
		cm.Labels[flinkha.LabelConfigMapType] = flinkha.LabelConfigMapTypeHA
	}
	return cm
}
