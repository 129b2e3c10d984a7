package flinkcluster

// RestoreAnnotation is how a user answers the SavepointRequired condition: when the controller
// stops for want of a confirmed final savepoint, it deploys nothing until this annotation names
// what the next deploy restores: a savepoint path (an older savepoint, knowingly) or
// RestoreEmptyState. It is the upgrade decision's UpgradeObservation.RestoreChoice, for the
// controller and for the admission policy's upgrade plan alike.
const RestoreAnnotation = "flinkclusters.flinkoperator.k8s.io/restore-from"

// RestoreEmptyState as the RestoreAnnotation's value starts the next deploy without state.
const RestoreEmptyState = "empty-state"

// RestoreChoice is the savepoint the RestoreAnnotation among annotations names ("" for empty
// state); nil without the annotation.
func RestoreChoice(annotations map[string]string) *string {
	v, ok := annotations[RestoreAnnotation]
	if !ok {
		return nil
	}
	// A copy taken only here: the admission policy asks on every update, most without it.
	choice := v
	if choice == RestoreEmptyState {
		choice = ""
	}
	return &choice
}
