// Package embedtest is a stand-in for an embedding model in tests and
// benchmarks: Concepts, a small deterministic embedder, and Server, a fake
// OpenAI-compatible /v1/embeddings server answering with it.
//
// Concepts is not a language model. It knows a fixed table of synonyms
// ("car", "automobile", "hatchback" are one concept) written for the
// paraphrase set in index/testdata, and hashes every other word into
// dimensions of its own. It makes paraphrases close so the plumbing and
// the fusion can be tested and measured offline; how well a real model
// finds paraphrases is measured by pointing the benchmarks at one (see
// README "Search and recall").
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode"
)

// concepts maps a word to the concept it stands for.
var concepts = map[string]string{}

func init() {
	for c, words := range map[string]string{
		"car":        "car cars automobile automobiles vehicle hatchback sedan",
		"buy":        "bought buy buying purchased purchase acquire",
		"doctor":     "doctor physician gp medic clinician",
		"tell":       "says said tell told mention mentioned",
		"cat":        "cat kitten feline",
		"name":       "called name named",
		"flat":       "flat apartment",
		"rent":       "rent lease",
		"money":      "euros cost price pay dollars expensive",
		"child":      "daughter son kid kids child children",
		"start":      "starts start begin begins",
		"school":     "kindergarten preschool school",
		"food":       "peanuts nuts nut food foods snack",
		"sick":       "allergic allergy sick ill reaction",
		"holiday":    "vacation holiday trip journey",
		"fly":        "fly flight plane airline",
		"japan":      "kyoto tokyo japan japanese",
		"job":        "job work employer position role career",
		"quit":       "quit resign resigned leave leaving stopped stop gave",
		"boss":       "boss manager supervisor",
		"meeting":    "meetings meeting calls call",
		"evening":    "7pm evening night late",
		"exercise":   "jogging running run jog exercise workout",
		"morning":    "dawn morning sunrise early",
		"sleep":      "insomnia sleep sleeping awake",
		"phone":      "phone mobile smartphone cellphone",
		"broken":     "broke broken cracked smashed damaged",
		"wedding":    "wedding marriage married wed",
		"sibling":    "sister sibling brother",
		"move":       "moving move relocate relocating",
		"city":       "berlin city town",
		"music":      "guitar instrument music piano",
		"lesson":     "lessons lesson learn learning class",
		"weekday":    "thursday thursdays day weekday",
		"password":   "password passcode pin",
		"internet":   "wifi router internet network",
		"medicine":   "pills medication medicine tablets prescription",
		"headache":   "migraine headache",
		"book":       "novel book reading read",
		"garden":     "garden yard tomatoes plants vegetables",
		"dog":        "dog puppy hound",
		"vet":        "vet veterinarian",
		"checkup":    "checkup visit",
		"fridge":     "fridge refrigerator freezer",
		"repair":     "repair fix mend technician plumber",
		"leak":       "leak leaking dripping drip",
		"bike":       "bike bicycle cycling",
		"stolen":     "stole stolen theft thief robbed",
		"insurance":  "insurance policy coverage insurer",
		"gift":       "gift present",
		"partner":    "wife husband partner spouse",
		"coffee":     "coffee espresso caffeine",
		"diet":       "vegetarian vegan meat diet",
		"heating":    "boiler heating heater radiator",
		"house":      "house home",
		"grandma":    "grandma grandmother granny",
		"surgery":    "surgery operation",
		"document":   "passport document id",
		"valid":      "expires expire valid",
		"babysitter": "babysitter nanny sitter minds",
		"weekend":    "saturday sunday weekend",
	} {
		for _, w := range strings.Fields(words) {
			concepts[w] = c
		}
	}
}

// stop words carry no meaning of their own here.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the i i'm im my me we our us you your to of in on at for is am are was were be been
		it its that this what which who when where how did do does will would can could there their she he her his they them
		and or with from by up out as so just about any anything some has have had not no after before into onto again
		going keep mind next every until two one another finally somebody lot bit`) {
		stop[w] = true
	}
}

// DefaultDim is the dimension of Concepts' vectors unless told otherwise.
const DefaultDim = 256

// Concepts embeds text in dim dimensions: every word that is not a stop
// word adds its concept (or, for a word not in the table, the word
// without a plural s) at three hashed dimensions with hashed signs. The
// result has unit length; texts sharing concepts have a high cosine.
func Concepts(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		w = strings.Trim(w, "'")
		w = strings.TrimSuffix(w, "'s")
		if w == "" || stop[w] {
			continue
		}
		key, ok := concepts[w]
		if !ok {
			key = "w:" + strings.TrimSuffix(w, "s")
		}
		for k := range 3 {
			h := fnv.New64a()
			h.Write([]byte{byte(k)})
			h.Write([]byte(key))
			x := h.Sum64()
			sign := float32(1)
			if x>>63 == 1 {
				sign = -1
			}
			v[int(x%uint64(dim))] += sign
		}
	}
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s > 0 {
		k := float32(1 / math.Sqrt(s))
		for i := range v {
			v[i] *= k
		}
	}
	return v
}

// Server is a fake OpenAI-compatible embeddings server answering POST
// /v1/embeddings with Concepts vectors. Its knobs (SetDim, SetDelay,
// SetFail) may be changed while it runs, from any goroutine.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	dim      int
	cycle    []int // dimensions answered in turn, one a request (SetDimCycle)
	delay    time.Duration
	fail     int // answer with this status when not 0
	requests int
	texts    int
	maxBatch int
	served   chan struct{} // closed and replaced after every answered request
}

// NewServer starts a fake server with DefaultDim dimensions. Its URL +
// "/v1" is the base_url to configure. Close it when done.
func NewServer() *Server {
	s := &Server{dim: DefaultDim, served: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// BaseURL is the API root to configure.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// SetDim changes the dimension of the vectors from the next request on.
func (s *Server) SetDim(d int) { s.mu.Lock(); s.dim = d; s.mu.Unlock() }

// SetDimCycle makes the requests answer in these dimensions in turn, one
// a request (a broken server with two models behind one name); none:
// back to SetDim's.
func (s *Server) SetDimCycle(dims ...int) { s.mu.Lock(); s.cycle = dims; s.mu.Unlock() }

// SetDelay makes every request wait d before answering (or until the
// client gives up).
func (s *Server) SetDelay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// SetFail makes every request answer with status (0: answer normally).
func (s *Server) SetFail(status int) { s.mu.Lock(); s.fail = status; s.mu.Unlock() }

// Stats returns the requests answered with vectors, the texts they held
// and the largest batch.
func (s *Server) Stats() (requests, texts, maxBatch int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.texts, s.maxBatch
}

// Served returns a channel closed when the next request has been answered.
func (s *Server) Served() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	dim, delay, fail := s.dim, s.delay, s.fail
	if len(s.cycle) > 0 {
		dim = s.cycle[s.requests%len(s.cycle)]
	}
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if fail != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fail)
		w.Write([]byte(`{"error":{"message":"the fake server was told to fail"}}`))
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, t := range req.Input {
		data[i] = item{"embedding", i, Concepts(t, dim)}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
	s.mu.Lock()
	s.requests++
	s.texts += len(req.Input)
	s.maxBatch = max(s.maxBatch, len(req.Input))
	close(s.served)
	s.served = make(chan struct{})
	s.mu.Unlock()
}
