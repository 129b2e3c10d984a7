package flinkcluster

// RestoreAnnotation answers the SavepointRequired condition: it names what the next deploy
// restores, a savepoint path or RestoreEmptyState.
const RestoreAnnotation = "flinkclusters.flinkoperator.k8s.io/restore-from"

// RestoreEmptyState as the RestoreAnnotation's value starts the next deploy without state.
const RestoreEmptyState = "empty-state"

// RestoreChoice is the savepoint the RestoreAnnotation names ("" for empty state), nil without it.
func RestoreChoice(annotations map[string]string) *string {
	v, ok := annotations[RestoreAnnotation]
	if !ok {
		return nil
	}
	choice := v
	if choice == RestoreEmptyState {
		choice = ""
	}
	return &choice
}
