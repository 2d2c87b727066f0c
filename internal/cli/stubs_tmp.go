package cli

type HookCmd struct{}
type InstallCmd struct{}
type UninstallCmd struct{}
