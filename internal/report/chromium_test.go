package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifact is where the screenshot is kept for a person to look at:
// $WIGGUM_ARTIFACTS, else testdata-out/ at the module root (git-ignored).
func artifact(t *testing.T, name string) string {
	dir := os.Getenv("WIGGUM_ARTIFACTS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for dir = wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			if filepath.Dir(dir) == dir {
				t.Fatal("no go.mod above the test's directory")
			}
		}
		dir = filepath.Join(dir, "testdata-out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// The page renders in a real browser as a person would see it: headless
// Chromium takes a screenshot, kept as a test artifact, which must show the
// timeline's colours - not a blank or single-colour page.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed (apt-get install chromium); skipping the rendering check")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, build(t, fixture, Options{}), generated); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := artifact(t, "report.png")
	os.Remove(shot)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+shot, "--window-size=1400,900", "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	// Chromium forks helpers: a timeout kills the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	t.Logf("screenshot of the HTML report: %s", shot)
	if bnd := img.Bounds(); bnd.Dx() != 1400 || bnd.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1400x900", bnd)
	}
	colours := map[[3]uint8]bool{}
	near := map[string]int{}
	want := map[string][3]uint8{"done": hex(colDone), "failed": hex(colFailed), "limit": hex(colLimit), "merge": hex(colMerge)}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := rgb(img, x, y)
			colours[c] = true
			for name, w := range want {
				if closeTo(c, w) {
					near[name]++
				}
			}
		}
	}
	if len(colours) < 50 {
		t.Errorf("the screenshot has %d colours: a blank page?", len(colours))
	}
	// Bars are 24px high: a few hundred pixels of each colour at least.
	for name, min := range map[string]int{"done": 5000, "failed": 2000, "limit": 500, "merge": 40} {
		if near[name] < min {
			t.Errorf("%d pixels of the %s colour, want at least %d: the timeline did not render", near[name], name, min)
		}
	}
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func hex(s string) [3]uint8 {
	var c [3]uint8
	for i := range 3 {
		var v uint8
		for _, ch := range s[1+2*i : 3+2*i] {
			v <<= 4
			switch {
			case ch >= '0' && ch <= '9':
				v |= uint8(ch - '0')
			default:
				v |= uint8(ch-'a') + 10
			}
		}
		c[i] = v
	}
	return c
}

func closeTo(a, b [3]uint8) bool {
	d := 0
	for i := range 3 {
		x := int(a[i]) - int(b[i])
		d += x * x
	}
	return d < 3*12*12
}
