package cli

type InstallCmd struct{}
type UninstallCmd struct{}
