package guard

import (
	"slices"
	"strings"
)

// A package registry or an image registry is published to without git:
// npm publish, cargo publish, twine upload, docker push. What an agent
// publishes there cannot be rolled back - a version number, once taken,
// is taken for good - and like a push it is the person's to do. The guard
// denies these in the session; building and packing locally (npm pack,
// cargo package, docker build) pass.

// publishers are, per program, the argument sequences that publish: the
// words (options left out) a command must start with.
var publishers = map[string][][]string{
	"npm":     {{"publish"}, {"unpublish"}, {"deprecate"}, {"dist-tag", "add"}, {"dist-tag", "rm"}},
	"pnpm":    {{"publish"}, {"unpublish"}, {"deprecate"}},
	"yarn":    {{"publish"}, {"npm", "publish"}, {"unpublish"}},
	"bun":     {{"publish"}},
	"cargo":   {{"publish"}, {"yank"}, {"owner"}},
	"twine":   {{"upload"}, {"register"}},
	"poetry":  {{"publish"}},
	"uv":      {{"publish"}},
	"hatch":   {{"publish"}},
	"flit":    {{"publish"}},
	"gem":     {{"push"}, {"yank"}},
	"docker":  {{"push"}, {"image", "push"}, {"manifest", "push"}, {"buildx", "imagetools", "create"}, {"compose", "push"}},
	"podman":  {{"push"}, {"image", "push"}, {"manifest", "push"}},
	"buildah": {{"push"}},
	"helm":    {{"push"}},
	"dotnet":  {{"nuget", "push"}, {"nuget", "delete"}},
	"nuget":   {{"push"}, {"delete"}},
	"mvn":     {{"deploy"}, {"release:perform"}},
	"vsce":    {{"publish"}},
	"ovsx":    {{"publish"}},
}

// deployers are, like publishers, the commands that change live
// infrastructure: an apply, a deploy, a destroy. A local plan, diff,
// build or preview passes.
var deployers = map[string][][]string{
	"terraform":  {{"apply"}, {"destroy"}, {"import"}, {"state", "rm"}, {"state", "mv"}, {"taint"}},
	"tofu":       {{"apply"}, {"destroy"}, {"import"}, {"state", "rm"}, {"state", "mv"}, {"taint"}},
	"terragrunt": {{"apply"}, {"destroy"}, {"run-all", "apply"}, {"run-all", "destroy"}},
	"pulumi":     {{"up"}, {"update"}, {"destroy"}, {"refresh"}, {"import"}},
	"cdk":        {{"deploy"}, {"destroy"}},
	"sam":        {{"deploy"}, {"delete"}, {"sync"}},
	"serverless": {{"deploy"}, {"remove"}},
	"sls":        {{"deploy"}, {"remove"}},
	"fly":        {{"deploy"}, {"destroy"}, {"apps", "destroy"}, {"secrets", "set"}},
	"flyctl":     {{"deploy"}, {"destroy"}, {"apps", "destroy"}, {"secrets", "set"}},
	"vercel":     {{"deploy"}, {"--prod"}, {"promote"}, {"remove"}, {"rm"}},
	"netlify":    {{"deploy", "--prod"}},
	"firebase":   {{"deploy"}, {"hosting:disable"}},
	"wrangler":   {{"deploy"}, {"publish"}, {"delete"}},
	"railway":    {{"up"}, {"down"}},
	"heroku":     {{"releases:rollback"}, {"apps:destroy"}, {"config:set"}},
}

// publishes denies a command that publishes to a registry, and reports
// whether it did. Buildx's --push and docker build --push publish too.
func (w *walk) publishes(base string, rest []string) bool {
	if w.deploys(base, rest) {
		return true
	}
	seqs, ok := publishers[base]
	if !ok {
		return false
	}
	var words []string
	var maybeValue []bool // the word follows an option: it may be its value
	prevOption := false
	for _, a := range rest {
		if a == "-h" || a == "--help" || a == "--dry-run" || a == "-n" && base == "cargo" {
			return false // the manual, or a rehearsal that publishes nothing
		}
		if base == "docker" || base == "podman" {
			if a == "--push" || strings.HasPrefix(a, "--output=type=registry") || a == "--output=type=image,push=true" {
				w.denyPublish(base, "build --push")
				return true
			}
		}
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			words = append(words, a)
			maybeValue = append(maybeValue, prevOption)
		}
		prevOption = strings.HasPrefix(a, "-") && !strings.Contains(a, "=")
	}
	for _, seq := range seqs {
		if base == "mvn" {
			// Maven takes its phases and goals anywhere among the words.
			for _, word := range words {
				if word == seq[0] {
					w.denyPublish(base, word)
					return true
				}
			}
			continue
		}
		if startsWith(words, maybeValue, seq) {
			w.denyPublish(base, strings.Join(seq, " "))
			return true
		}
	}
	return false
}

// startsWith reports whether the command's words begin with seq, the
// words before it allowed only where each may be an option's value (npm
// --registry URL publish, docker -H HOST push; never npm run publish), or
// with every such word left out.
func startsWith(words []string, maybeValue []bool, seq []string) bool {
	for i := 0; i+len(seq) <= len(words); i++ {
		if slices.Equal(words[i:i+len(seq)], seq) {
			return true
		}
		if !maybeValue[i] {
			break
		}
	}
	// Or every word after an option taken for its value (docker compose
	// -f FILE push).
	var firm []string
	for i, w := range words {
		if !maybeValue[i] {
			firm = append(firm, w)
		}
	}
	return len(firm) >= len(seq) && slices.Equal(firm[:len(seq)], seq)
}

// denyPublish denies publishing to a registry.
func (w *walk) denyPublish(base, what string) {
	w.g.verdict(Deny, "%s %s publishes to a registry, for good (a version, once published, is taken), which is not allowed during a wiggum session: build and pack locally and leave publishing to the person running the loop", base, what)
}

// vercelLocal are vercel's commands that deploy nothing, --prod or not.
var vercelLocal = []string{"build", "dev", "env", "pull", "link", "login", "logout", "logs", "inspect", "ls", "list", "whoami", "help", "init", "project", "projects", "domains", "dns", "certs", "teams", "switch", "git", "bisect"}

// deploys denies a command that changes live infrastructure, and reports
// whether it did. Options count as words here where the tool takes its
// action as one (vercel --prod, netlify deploy --prod).
func (w *walk) deploys(base string, rest []string) bool {
	seqs, ok := deployers[base]
	if !ok {
		return false
	}
	var words []string
	var maybeValue []bool
	prevOption := false
	for _, a := range rest {
		switch {
		case a == "-h" || a == "--help" || a == "--dry-run" || a == "-dry-run" || a == "--preview":
			return false
		case a == "--prod" || a == "--production":
			words = append(words, "--prod")
			maybeValue = append(maybeValue, true)
		case !strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			words = append(words, a)
			maybeValue = append(maybeValue, prevOption)
		}
		prevOption = strings.HasPrefix(a, "-") && !strings.Contains(a, "=")
	}
	local := false // vercel build --prod builds here; vercel --prod deploys
	for _, word := range words {
		if word != "--prod" {
			local = slices.Contains(vercelLocal, word)
			break
		}
	}
	for _, seq := range seqs {
		if seq[len(seq)-1] == "--prod" && !local && slices.Contains(words, "--prod") && (len(seq) == 1 || slices.Contains(words, seq[0])) {
			w.denyDeploy(base, strings.Join(seq, " "))
			return true
		}
		if startsWith(words, maybeValue, seq) {
			w.denyDeploy(base, strings.Join(seq, " "))
			return true
		}
	}
	return false
}

// denyDeploy denies changing live infrastructure.
func (w *walk) denyDeploy(base, what string) {
	w.g.verdict(Deny, "%s %s changes live infrastructure, which is not allowed during a wiggum session: plan, build and preview locally and leave deploying to the person running the loop", base, what)
}
