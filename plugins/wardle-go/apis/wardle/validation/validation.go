// Package validation validates the internal wardle types (sample-apiserver's pkg/apis/wardle/validation).
package validation

import (
	"fmt"

	"wardle/apis/wardle"

	"wasm-apiserver.io/guest/field"
)

// ValidateFlunder validates a Flunder.
func ValidateFlunder(f *wardle.Flunder) field.ErrorList {
	return ValidateFlunderSpec(&f.Spec, field.NewPath("spec"))
}

// ValidateFlunderSpec validates a FlunderSpec: the references are mutually exclusive, each needs its matching
// reference type, a reference type needs its reference, and the reference type is Flunder or Fischer.
func ValidateFlunderSpec(s *wardle.FlunderSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}

	switch {
	case len(s.FlunderReference) != 0 && len(s.FischerReference) != 0:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("fischerReference"), s.FischerReference, "cannot be set with flunderReference at the same time"))
	case len(s.FlunderReference) != 0 && s.ReferenceType != wardle.FlunderReferenceType:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("flunderReference"), s.FlunderReference, "cannot be set if referenceType is not Flunder"))
	case len(s.FischerReference) != 0 && s.ReferenceType != wardle.FischerReferenceType:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("fischerReference"), s.FischerReference, "cannot be set if referenceType is not Fischer"))
	case len(s.FischerReference) == 0 && s.ReferenceType == wardle.FischerReferenceType:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("fischerReference"), s.FischerReference, "cannot be empty if referenceType is Fischer"))
	case len(s.FlunderReference) == 0 && s.ReferenceType == wardle.FlunderReferenceType:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("flunderReference"), s.FlunderReference, "cannot be empty if referenceType is Flunder"))
	}

	if len(s.ReferenceType) != 0 && s.ReferenceType != wardle.FischerReferenceType && s.ReferenceType != wardle.FlunderReferenceType {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("referenceType"), s.ReferenceType, "must be Flunder or Fischer"))
	}
	if s.Replicas != nil && *s.Replicas < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), *s.Replicas, "must be greater than or equal to 0"))
	}
	return allErrs
}

// ValidateFlunderStatusUpdate validates a status update: counts are not negative, and the observed generation is not
// ahead of the object's.
func ValidateFlunderStatusUpdate(f, old *wardle.Flunder) field.ErrorList {
	allErrs := field.ErrorList{}
	path := field.NewPath("status")
	if f.Status.Replicas < 0 {
		allErrs = append(allErrs, field.Invalid(path.Child("replicas"), f.Status.Replicas, "must be an integer greater than or equal to 0"))
	}
	switch generation := f.Metadata.Generation; {
	case f.Status.ObservedGeneration < 0:
		allErrs = append(allErrs, field.Invalid(path.Child("observedGeneration"), f.Status.ObservedGeneration, "must be an integer greater than or equal to 0"))
	case f.Status.ObservedGeneration > generation:
		allErrs = append(allErrs, field.Invalid(path.Child("observedGeneration"), f.Status.ObservedGeneration, fmt.Sprintf("must not be greater than metadata.generation (%d)", generation)))
	}
	return allErrs
}
