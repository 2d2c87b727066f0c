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

// publishersOf lists, for a program, the argument sequences that publish:
// the words (options left out) a command must start with. A switch, not a
// map every process would build at its start (forge.go).
func publishersOf(base string) [][]string {
	switch base {
	case "npm":
		return [][]string{{"publish"}, {"unpublish"}, {"deprecate"}, {"dist-tag", "add"}, {"dist-tag", "rm"}}
	case "pnpm":
		return [][]string{{"publish"}, {"unpublish"}, {"deprecate"}}
	case "yarn":
		return [][]string{{"publish"}, {"npm", "publish"}, {"unpublish"}}
	case "bun", "poetry", "uv", "hatch", "flit", "vsce", "ovsx":
		return [][]string{{"publish"}}
	case "cargo":
		return [][]string{{"publish"}, {"yank"}, {"owner"}}
	case "twine":
		return [][]string{{"upload"}, {"register"}}
	case "gem":
		return [][]string{{"push"}, {"yank"}}
	case "docker":
		return [][]string{{"push"}, {"image", "push"}, {"manifest", "push"}, {"buildx", "imagetools", "create"}, {"compose", "push"}}
	case "podman":
		return [][]string{{"push"}, {"image", "push"}, {"manifest", "push"}}
	case "buildah", "helm":
		return [][]string{{"push"}}
	case "dotnet":
		return [][]string{{"nuget", "push"}, {"nuget", "delete"}}
	case "nuget":
		return [][]string{{"push"}, {"delete"}}
	case "mvn":
		return [][]string{{"deploy"}, {"release:perform"}}
	}
	return nil
}

// deployersOf lists, like publishersOf, the commands that change live
// infrastructure: an apply, a deploy, a destroy. A local plan, diff,
// build or preview passes.
func deployersOf(base string) [][]string {
	switch base {
	case "terraform", "tofu":
		return [][]string{{"apply"}, {"destroy"}, {"import"}, {"state", "rm"}, {"state", "mv"}, {"taint"}}
	case "terragrunt":
		return [][]string{{"apply"}, {"destroy"}, {"run-all", "apply"}, {"run-all", "destroy"}}
	case "pulumi":
		return [][]string{{"up"}, {"update"}, {"destroy"}, {"refresh"}, {"import"}}
	case "cdk":
		return [][]string{{"deploy"}, {"destroy"}}
	case "sam":
		return [][]string{{"deploy"}, {"delete"}, {"sync"}}
	case "serverless", "sls":
		return [][]string{{"deploy"}, {"remove"}}
	case "fly", "flyctl":
		return [][]string{{"deploy"}, {"destroy"}, {"apps", "destroy"}, {"secrets", "set"}}
	case "vercel":
		return [][]string{{"deploy"}, {"--prod"}, {"promote"}, {"remove"}, {"rm"}}
	case "netlify":
		return [][]string{{"deploy", "--prod"}}
	case "firebase":
		return [][]string{{"deploy"}, {"hosting:disable"}}
	case "wrangler":
		return [][]string{{"deploy"}, {"publish"}, {"delete"}}
	case "railway":
		return [][]string{{"up"}, {"down"}}
	case "heroku":
		return [][]string{{"releases:rollback"}, {"apps:destroy"}, {"config:set"}}
	}
	return nil
}

// publishes denies a command that publishes to a registry, and reports
// whether it did. Buildx's --push and docker build --push publish too.
func (w *walk) publishes(base string, rest []string) bool {
	if w.deploys(base, rest) {
		return true
	}
	seqs := publishersOf(base)
	if seqs == nil {
		return false
	}
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
	}
	words, maybeValue := commandWords(rest, false)
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

// commandWords lists a command's words - its arguments that are no
// options - each marked when it follows an option and so may be that
// option's value. With prod, --prod and --production count as the word
// "--prod" (vercel and netlify take their action as that option).
func commandWords(rest []string, prod bool) (words []string, maybeValue []bool) {
	prevOption := false
	for _, a := range rest {
		switch {
		case prod && (a == "--prod" || a == "--production"):
			words = append(words, "--prod")
			maybeValue = append(maybeValue, true)
		case !strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			words = append(words, a)
			maybeValue = append(maybeValue, prevOption)
		}
		prevOption = strings.HasPrefix(a, "-") && !strings.Contains(a, "=")
	}
	return words, maybeValue
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
	seqs := deployersOf(base)
	if seqs == nil {
		return false
	}
	for _, a := range rest {
		if a == "-h" || a == "--help" || a == "--dry-run" || a == "-dry-run" || a == "--preview" {
			return false
		}
	}
	words, maybeValue := commandWords(rest, true)
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
