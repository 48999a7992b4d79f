// Package wardle holds the internal types of the wardle.example.com group (sample-apiserver's pkg/apis/wardle):
// what the plugin's hooks see, whatever version a request uses. They are never written as they are: objects are
// read and written in a served version (v1alpha1, v1beta1), converted to and from these.
package wardle

import guest "wasm-apiserver.io/guest"

// GroupName is the API group.
const GroupName = "wardle.example.com"

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
	Metadata guest.ObjectMeta

	Spec   FlunderSpec
	Status FlunderStatus
}

// FlunderSpec is the specification of a Flunder.
type FlunderSpec struct {
	// A name of another flunder, mutually exclusive to the FischerReference.
	FlunderReference string
	// A name of a fischer, mutually exclusive to the FlunderReference.
	FischerReference string
	// The reference type.
	ReferenceType ReferenceType
	// The desired number of replicas (what /scale reads and writes); nil when unset.
	Replicas *int64
}

// FlunderStatus is the status of a Flunder, written through its /status subresource.
type FlunderStatus struct {
	// The number of replicas observed.
	Replicas int64
	// The metadata.generation the status was observed at.
	ObservedGeneration int64
	// The label selector of the replicas, for /scale.
	Selector string
}
