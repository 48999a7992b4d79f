// Package v1alpha1 is the version v1alpha1 of wardle.example.com: the storage version of flunders and the only
// version of fischers.
package v1alpha1

import guest "wasm-apiserver.io/guest"

// Version is the version's name.
const Version = "v1alpha1"

// ReferenceType is the kind of object a flunder refers to.
type ReferenceType string

const (
	// FlunderReferenceType refers to another flunder.
	FlunderReferenceType = ReferenceType("Flunder")
	// FischerReferenceType refers to a fischer.
	FischerReferenceType = ReferenceType("Fischer")
)

// Flunder is an example type with a spec and a status.
type Flunder struct {
	guest.TypeMeta
	Metadata guest.ObjectMeta `json:"metadata"`

	Spec   FlunderSpec   `json:"spec"`
	Status FlunderStatus `json:"status"`
}

// FlunderSpec is the specification of a Flunder.
type FlunderSpec struct {
	// A name of another flunder or fischer, depending on the reference type.
	Reference string `json:"reference,omitempty"`
	// The reference type, defaults to "Flunder" if reference is set.
	ReferenceType *ReferenceType `json:"referenceType,omitempty"`
	// The desired number of replicas, as /scale reads and writes it.
	Replicas *int64 `json:"replicas,omitempty"`
}

// FlunderStatus is the status of a Flunder.
type FlunderStatus struct {
	// The number of replicas observed.
	Replicas int64 `json:"replicas,omitempty"`
	// The metadata.generation the status was observed at.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// The label selector of the replicas, for /scale.
	Selector string `json:"selector,omitempty"`
}

// Fischer is a cluster-scoped object listing flunder names that may not be used.
type Fischer struct {
	guest.TypeMeta
	Metadata guest.ObjectMeta `json:"metadata"`

	// DisallowedFlunders holds a list of Flunder.Names that are disallowed.
	DisallowedFlunders []string `json:"disallowedFlunders,omitempty"`
}
