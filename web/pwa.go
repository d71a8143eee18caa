package web

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"
	"sync"
)

// The installable page (a PWA): the web app manifest, its icons, and the
// service worker. None needs a session: they hold nothing of anyone's.

//go:embed pwa/sw.js
var serviceWorker []byte

// themeColor is the manifest's and the page's theme color.
const themeColor = "#0b5cad"

// iconSizes are the icons the manifest names (192 and 512: what Chrome
// wants to offer Install; 180: the iOS Home Screen's).
var iconSizes = []int{180, 192, 512}

// pwa holds the manifest and the icons, each made once. An icon is drawn
// when it is first asked for, not at start: drawing and encoding the three
// took about 6 MiB of garbage that an idle gateway kept until its first
// collection.
type pwa struct {
	manifest []byte
	icons    map[string]func() []byte // by path
}

func newPWA(name string) *pwa {
	p := &pwa{icons: map[string]func() []byte{}}
	type icon struct {
		Src     string `json:"src"`
		Sizes   string `json:"sizes"`
		Type    string `json:"type"`
		Purpose string `json:"purpose"`
	}
	m := struct {
		Name            string `json:"name"`
		ShortName       string `json:"short_name"`
		ID              string `json:"id"`
		StartURL        string `json:"start_url"`
		Scope           string `json:"scope"`
		Display         string `json:"display"`
		ThemeColor      string `json:"theme_color"`
		BackgroundColor string `json:"background_color"`
		Icons           []icon `json:"icons"`
	}{Name: name, ShortName: "Gateway", ID: "/", StartURL: "/", Scope: "/", Display: "standalone",
		ThemeColor: themeColor, BackgroundColor: "#f4f5f7"}
	for _, n := range iconSizes {
		path := "/icons/icon-" + itoa(n) + ".png"
		p.icons[path] = sync.OnceValue(func() []byte { return drawIcon(n) })
		if n != 180 {
			m.Icons = append(m.Icons, icon{Src: path, Sizes: itoa(n) + "x" + itoa(n), Type: "image/png", Purpose: "any maskable"})
		}
	}
	p.manifest, _ = json.Marshal(m)
	return p
}

func itoa(n int) string { return strconv.Itoa(n) }

// drawIcon draws the icon at n×n: a check mark on the theme color, inside
// the middle 80% that a maskable icon keeps.
func drawIcon(n int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, n, n))
	bg, fg := color.RGBA{0x0b, 0x5c, 0xad, 0xff}, color.RGBA{0xff, 0xff, 0xff, 0xff}
	for y := range n {
		for x := range n {
			img.Set(x, y, bg)
		}
	}
	// The check: from (0.30,0.52) down to (0.44,0.66), up to (0.72,0.36).
	stroke := max(n/14, 2)
	line := func(x0, y0, x1, y1 float64) {
		steps := n * 2
		for i := 0; i <= steps; i++ {
			t := float64(i) / float64(steps)
			cx, cy := int((x0+(x1-x0)*t)*float64(n)), int((y0+(y1-y0)*t)*float64(n))
			for dy := -stroke / 2; dy <= stroke/2; dy++ {
				for dx := -stroke / 2; dx <= stroke/2; dx++ {
					img.Set(cx+dx, cy+dy, fg)
				}
			}
		}
	}
	line(0.30, 0.52, 0.44, 0.66)
	line(0.44, 0.66, 0.72, 0.36)
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// pwaRoutes mounts the manifest, the icons and the service worker.
func (w *web) pwaRoutes(mux *http.ServeMux) {
	p := newPWA(w.loc.T("web.title") + " · gateway")
	mux.HandleFunc("GET /manifest.webmanifest", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/manifest+json")
		rw.Header().Set("Cache-Control", "no-cache")
		_, _ = rw.Write(p.manifest)
	})
	mux.HandleFunc("GET /icons/{name}", func(rw http.ResponseWriter, r *http.Request) {
		icon, ok := p.icons[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		b := icon()
		rw.Header().Set("Content-Type", "image/png")
		rw.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = rw.Write(b)
	})
	// The worker's scope is the whole page; it is always fetched fresh,
	// so a new gateway's worker replaces the old one at the next visit.
	mux.HandleFunc("GET /sw.js", func(rw http.ResponseWriter, r *http.Request) {
		h := rw.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Service-Worker-Allowed", "/")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = rw.Write(serviceWorker)
	})
}
