package v1alpha1

// SetDefaults_FlunderSpec sets the reference type of a set reference to Flunder when it is empty or missing.
func SetDefaults_FlunderSpec(obj *FlunderSpec) {
	if (obj.ReferenceType == nil || len(*obj.ReferenceType) == 0) && len(obj.Reference) != 0 {
		t := FlunderReferenceType
		obj.ReferenceType = &t
	}
}

// SetDefaults_Flunder sets a flunder's defaults.
func SetDefaults_Flunder(obj *Flunder) {
	SetDefaults_FlunderSpec(&obj.Spec)
}
