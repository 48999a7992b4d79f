// Package v1beta1 is the version v1beta1 of wardle.example.com: the preferred version of flunders.
package v1beta1

import guest "wasm-apiserver.io/guest"

// Version is the version's name.
const Version = "v1beta1"

// ReferenceType is the kind of object a flunder refers to.
type ReferenceType string

// Flunder is an example type with a spec and a status.
type Flunder struct {
	guest.TypeMeta
	Metadata guest.ObjectMeta `json:"metadata"`

	Spec   FlunderSpec   `json:"spec"`
	Status FlunderStatus `json:"status"`
}

// FlunderSpec is the specification of a Flunder.
type FlunderSpec struct {
	// A name of another flunder, mutually exclusive to the FischerReference.
	FlunderReference string `json:"flunderReference,omitempty"`
	// A name of a fischer, mutually exclusive to the FlunderReference.
	FischerReference string `json:"fischerReference,omitempty"`
	// The reference type.
	ReferenceType ReferenceType `json:"referenceType,omitempty"`
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
