package v1beta1

import "wardle/apis/wardle"

// Convert_v1beta1_Flunder_To_wardle_Flunder converts a v1beta1 flunder to the internal type: a copy.
func Convert_v1beta1_Flunder_To_wardle_Flunder(in *Flunder, out *wardle.Flunder) error {
	out.Metadata = in.Metadata
	out.Spec = wardle.FlunderSpec{
		FlunderReference: in.Spec.FlunderReference,
		FischerReference: in.Spec.FischerReference,
		ReferenceType:    wardle.ReferenceType(in.Spec.ReferenceType),
		Replicas:         in.Spec.Replicas,
	}
	out.Status = wardle.FlunderStatus(in.Status)
	return nil
}

// Convert_wardle_Flunder_To_v1beta1_Flunder converts an internal flunder to v1beta1: a copy.
func Convert_wardle_Flunder_To_v1beta1_Flunder(in *wardle.Flunder, out *Flunder) error {
	out.Metadata = in.Metadata
	out.Spec = FlunderSpec{
		FlunderReference: in.Spec.FlunderReference,
		FischerReference: in.Spec.FischerReference,
		ReferenceType:    ReferenceType(in.Spec.ReferenceType),
		Replicas:         in.Spec.Replicas,
	}
	out.Status = FlunderStatus(in.Status)
	return nil
}
