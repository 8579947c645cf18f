package openapi

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Register mounts GET /openapi/v2 and GET /openapi/v3 and /openapi/v3/* on r.
func (d *Documents) Register(r chi.Router) {
	r.Get("/openapi/v2", d.serveV2)
	r.Get("/openapi/v3", d.serveIndex)
	r.Get("/openapi/v3/*", d.serveGroupVersion)
}

// The media types a client may ask for, with the names upstream accepts
// (client-go sends the older "@v1.0" spelling).
var (
	jsonNames    = []string{"application/json"}
	v2ProtoNames = []string{
		"application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
		"application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
	}
	v3ProtoNames = []string{
		"application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
		"application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
	}
)

// offer is a representation and the media type names that select it.
type offer struct {
	names []string
	get   func() (*encoded, error)
}

func eager(e *encoded) func() (*encoded, error) {
	return func() (*encoded, error) { return e, nil }
}

func (d *Documents) serveV2(w http.ResponseWriter, r *http.Request) {
	serve(w, r, offer{jsonNames, eager(&d.v2JSON)}, offer{v2ProtoNames, d.v2Proto.get})
}

func (d *Documents) serveIndex(w http.ResponseWriter, r *http.Request) {
	index := d.currentIndex()
	w.Header().Set("Content-Type", index.contentType)
	w.Header().Set("ETag", strconv.Quote(index.etag))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(index.data))
}

// serveGroupVersion serves /openapi/v3/<api/v1 | apis/<group>/<version>>.
// With ?hash= matching the document the response may be cached forever;
// a stale hash is redirected to the current URL, as upstream does.
func (d *Documents) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	g, ok := d.group(chi.URLParam(r, "*"))
	if !ok {
		http.NotFound(w, r)
		return
	}
	if h := r.URL.Query().Get("hash"); h != "" {
		if h != g.hash {
			http.Redirect(w, r, g.url, http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serve(w, r, offer{jsonNames, eager(&g.json)}, offer{v3ProtoNames, g.proto.get})
}

// serve writes the first offer the Accept header selects, or 406. ETag and
// If-None-Match (304) are handled by http.ServeContent.
func serve(w http.ResponseWriter, r *http.Request, offers ...offer) {
	w.Header().Add("Vary", "Accept")
	o, ok := negotiate(r.Header.Get("Accept"), offers)
	if !ok {
		http.Error(w, "none of the accepted media types is served here", http.StatusNotAcceptable)
		return
	}
	doc, err := o.get()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", doc.contentType)
	w.Header().Set("ETag", strconv.Quote(doc.etag))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(doc.data))
}

// negotiate picks the offer for an Accept header: clauses by descending
// quality (in header order on ties), wildcards selecting the first offer.
// An empty header selects the first offer.
func negotiate(accept string, offers []offer) (offer, bool) {
	if strings.TrimSpace(accept) == "" {
		return offers[0], true
	}
	type clause struct {
		media string
		q     float64
	}
	var clauses []clause
	for _, part := range strings.Split(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		c := clause{media: strings.ToLower(strings.TrimSpace(media)), q: 1}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					c.q = q
				}
			}
		}
		if c.q > 0 && c.media != "" {
			clauses = append(clauses, c)
		}
	}
	sort.SliceStable(clauses, func(i, j int) bool { return clauses[i].q > clauses[j].q })
	for _, c := range clauses {
		if c.media == "*/*" || c.media == "application/*" {
			return offers[0], true
		}
		for _, o := range offers {
			for _, name := range o.names {
				if c.media == name {
					return o, true
				}
			}
		}
	}
	return offer{}, false
}
