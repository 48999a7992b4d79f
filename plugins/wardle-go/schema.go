package main

// The OpenAPI v3 schemas of the served versions, each with an example object that `wasm-apiserver plugin check`
// validates and converts through every other version and back.

var flunderV1alpha1Schema = flunderSchema(`{
        "reference": {"type": "string", "description": "A name of another flunder or fischer, depending on the reference type."},
        "referenceType": {"type": "string", "description": "The reference type, defaults to \"Flunder\" if reference is set."},
        "replicas": {"type": "integer", "format": "int64", "description": "The desired number of replicas, as /scale reads and writes it."}
      }`, `{"spec": {"reference": "another-flunder", "referenceType": "Flunder"}, "status": {}}`)

var flunderV1beta1Schema = flunderSchema(`{
        "flunderReference": {"type": "string", "description": "A name of another flunder, mutually exclusive to the FischerReference."},
        "fischerReference": {"type": "string", "description": "A name of a fischer, mutually exclusive to the FlunderReference."},
        "referenceType": {"type": "string", "description": "The reference type."},
        "replicas": {"type": "integer", "format": "int64", "description": "The desired number of replicas, as /scale reads and writes it."}
      }`, `{"spec": {"fischerReference": "a-fischer", "referenceType": "Fischer"}, "status": {}}`)

// flunderSchema is the schema of a Flunder whose spec has these properties, with this example.
func flunderSchema(specProperties, example string) string {
	return `{
  "type": "object",
  "description": "Flunder is an example type with a spec and a status.",
  "properties": {
    "spec": {
      "type": "object",
      "description": "FlunderSpec is the specification of a Flunder.",
      "properties": ` + specProperties + `
    },
    "status": ` + flunderStatusSchema + `
  },
  "example": ` + example + `
}`
}

const flunderStatusSchema = `{
      "type": "object",
      "description": "FlunderStatus is the status of a Flunder, written through its /status subresource.",
      "properties": {
        "replicas": {"type": "integer", "format": "int64", "description": "The number of replicas observed."},
        "observedGeneration": {"type": "integer", "format": "int64", "description": "The metadata.generation the status was observed at."},
        "selector": {"type": "string", "description": "The label selector of the replicas, for /scale."}
      }
    }`

const fischerSchema = `{
  "type": "object",
  "description": "Fischer is an example type holding the names of flunders that may not be used.",
  "properties": {
    "disallowedFlunders": {
      "type": "array",
      "description": "DisallowedFlunders holds a list of Flunder.Names that are disallowed.",
      "items": {"type": "string", "default": ""},
      "x-kubernetes-list-type": "atomic"
    }
  }
}`
