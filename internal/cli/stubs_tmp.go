package cli

type CheckpointCmd struct{}
type RollbackCmd struct{}
type RecoverCmd struct{}
type StatusCmd struct{}
type HookCmd struct{}
type InstallCmd struct{}
type UninstallCmd struct{}
