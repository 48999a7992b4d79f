package v1alpha1

import "wardle/apis/wardle"

// Convert_v1alpha1_Flunder_To_wardle_Flunder converts a v1alpha1 flunder to the internal type: the reference type
// picks which reference `reference` is; a missing or unknown reference type leaves both references empty.
func Convert_v1alpha1_Flunder_To_wardle_Flunder(in *Flunder, out *wardle.Flunder) error {
	out.Metadata = in.Metadata
	if in.Spec.ReferenceType != nil {
		switch *in.Spec.ReferenceType {
		case FlunderReferenceType:
			out.Spec.ReferenceType = wardle.FlunderReferenceType
			out.Spec.FlunderReference = in.Spec.Reference
		case FischerReferenceType:
			out.Spec.ReferenceType = wardle.FischerReferenceType
			out.Spec.FischerReference = in.Spec.Reference
		}
	}
	out.Spec.Replicas = in.Spec.Replicas
	out.Status = wardle.FlunderStatus(in.Status)
	return nil
}

// Convert_wardle_Flunder_To_v1alpha1_Flunder converts an internal flunder to v1alpha1: the reference the reference
// type names becomes `reference`.
func Convert_wardle_Flunder_To_v1alpha1_Flunder(in *wardle.Flunder, out *Flunder) error {
	out.Metadata = in.Metadata
	switch in.Spec.ReferenceType {
	case wardle.FlunderReferenceType:
		t := FlunderReferenceType
		out.Spec.ReferenceType = &t
		out.Spec.Reference = in.Spec.FlunderReference
	case wardle.FischerReferenceType:
		t := FischerReferenceType
		out.Spec.ReferenceType = &t
		out.Spec.Reference = in.Spec.FischerReference
	}
	out.Spec.Replicas = in.Spec.Replicas
	out.Status = FlunderStatus(in.Status)
	return nil
}
