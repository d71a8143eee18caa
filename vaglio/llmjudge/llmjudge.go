// Package llmjudge is vaglio's opt-in LLM judge, llm-v1 (vaglio seed §5):
// it asks a model, through an OpenAI-style chat-completions API or the
// Anthropic Messages API, how well a request serves its intent, and reads
// back a score in [0,1] with a one-sentence reason.
//
// It only ever replaces the rule-based judge's score. The guard runs
// before any judge and never passes through the model. When the model is
// slow, down, over budget or answers anything but the JSON asked for, the
// rule-based judge decides and the reason says why ("llm judge
// unavailable: …"): a failing model never allows anything the rule-based
// judge would not.
package llmjudge

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/metnos/gateway/vaglio"
)

// Kind is the judge_kind of the verdicts the model scored.
const Kind = "llm-v1"

// The values of Config.API.
const (
	APIOpenAI    = "openai"    // POST {url}/chat/completions
	APIAnthropic = "anthropic" // POST {url}/messages
)

// CacheTTL is how long a score is reused for an identical ask: an agent
// retrying the same call within a minute does not pay for a second call.
const CacheTTL = time.Minute

// Limits that keep a misbehaving server or model from costing memory or
// filling the log.
const (
	maxAnswerBytes  = 1 << 20 // the HTTP answer read at most
	maxReasonRunes  = 200     // the model's reason kept at most
	maxCacheEntries = 4096
	anthropicTokens = 256 // max_tokens asked of the Messages API
	anthropicVer    = "2023-06-01"
)

// Config is the [vaglio.llm] table, with the key resolved.
type Config struct {
	API            string // APIOpenAI or APIAnthropic
	URL            string // the API's base, e.g. http://127.0.0.1:11434/v1
	Model          string
	APIKey         string // "" sends none
	Timeout        time.Duration
	MaxCallsPerDay int  // per agent and UTC day; 0 = no limit
	MaxCallsTotal  int  // all agents together, per UTC day; 0 = no bound
	SendArgValues  bool // false: the model sees argument keys only
	// RuleBasedOnFailure lets the fallback judge decide alone when the
	// model did not score a request; false (on_failure = "ask") marks
	// the judgement Unscored, which sends the request to a person.
	RuleBasedOnFailure bool
}

// Judge is the LLM judge. It is safe for concurrent use.
type Judge struct {
	cfg      Config
	client   *http.Client
	fallback vaglio.Judge
	now      func() time.Time

	flight singleflight.Group

	mu    sync.Mutex
	day   string // the UTC day calls and perAgent count
	calls int
	// perAgent counts each agent's calls today: one agent spending its
	// budget leaves the others theirs.
	perAgent map[string]int
	cache    map[[sha256.Size]byte]cached
}

type cached struct {
	score  float64
	reason string
	at     time.Time
}

// New builds the judge. client is the HTTP client it calls the model with
// (nil: a client that never follows redirects, so a key is never sent
// elsewhere); fallback decides when the model cannot (nil: the rule-based
// judge); now is the clock (nil: time.Now).
func New(cfg Config, client *http.Client, fallback vaglio.Judge, now func() time.Time) *Judge {
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if fallback == nil {
		fallback = vaglio.RuleJudge{}
	}
	if now == nil {
		now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &Judge{cfg: cfg, client: client, fallback: fallback, now: now, perAgent: map[string]int{},
		cache: map[[sha256.Size]byte]cached{}}
}

// Kind returns Kind: the configured judge.
func (j *Judge) Kind() string { return Kind }

// Score asks the model, or answers from the cache, or, when the model
// cannot answer, returns the fallback judge's score with its kind and the
// reason the model was not used. It never returns an error of its own.
func (j *Judge) Score(ctx context.Context, r vaglio.Request) (vaglio.Judgement, error) {
	ask, err := j.ask(r)
	if err != nil {
		return j.fallBack(ctx, r, err.Error())
	}
	key := sha256.Sum256(append([]byte(j.cfg.API+"\x00"+j.cfg.URL+"\x00"+j.cfg.Model+"\x00"), ask...))
	if c, ok := j.fromCache(key); ok {
		return j.capped(ctx, r, vaglio.Judgement{Score: c.score, Reason: c.reason + " (cached)", Kind: Kind})
	}
	// Identical asks at the same moment share one call. The call runs on
	// a context that outlives any one caller's cancellation but not the
	// timeout, so one agent hanging up does not fail the others.
	v, err, _ := j.flight.Do(string(key[:]), func() (any, error) {
		if why := j.spend(r.Agent); why != "" {
			return nil, errors.New(why)
		}
		score, reason, err := j.call(context.WithoutCancel(ctx), ask)
		if err != nil {
			return nil, err
		}
		c := cached{score: score, reason: fmt.Sprintf("%s (%s): %s", Kind, j.cfg.Model, cleanReason(reason, r, j.cfg.SendArgValues)), at: j.now()}
		j.store(key, c)
		return c, nil
	})
	if err != nil {
		return j.fallBack(ctx, r, err.Error())
	}
	c := v.(cached)
	return j.capped(ctx, r, vaglio.Judgement{Score: c.score, Reason: c.reason, Kind: Kind})
}

// capped applies the rule-based judge's fixed negative signals (hidden
// characters, traversal, odd keys) on top of the model's score: when one
// fires, the score is at most the rule-based base with those signals
// alone (see vaglio.RuleCap), so no intent can talk the model past them
// and judge_threshold keeps its meaning.
func (j *Judge) capped(_ context.Context, r vaglio.Request, m vaglio.Judgement) (vaglio.Judgement, error) {
	limit, factors, why := vaglio.RuleCap(r)
	if len(factors) == 0 {
		return m, nil
	}
	m.Factors = factors
	if m.Score > limit {
		m.Score = limit
		m.Reason += "; capped at " + strconv.FormatFloat(limit, 'f', 2, 64) + " by " + why
	}
	return m, nil
}

// fallBack scores with the fallback judge and says why. Unless the owner
// chose the rule-based judge on failure, the judgement is Unscored: the
// decision then asks a person rather than allow on the weaker judge.
func (j *Judge) fallBack(ctx context.Context, r vaglio.Request, why string) (vaglio.Judgement, error) {
	fb, err := j.fallback.Score(ctx, r)
	if err != nil {
		return vaglio.Judgement{}, fmt.Errorf("llm judge unavailable: %s; %s: %w", why, j.fallback.Kind(), err)
	}
	if fb.Kind == "" {
		fb.Kind = j.fallback.Kind()
	}
	fb.Reason = "llm judge unavailable: " + why + "; " + fb.Reason
	if !j.cfg.RuleBasedOnFailure {
		fb.Unscored = "llm judge unavailable: " + why
	}
	return fb, nil
}

// spend takes one call from the agent's budget for the day and from the
// total, or says why it cannot.
func (j *Judge) spend(agent string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if day := j.now().UTC().Format(time.DateOnly); day != j.day {
		j.day, j.calls = day, 0
		clear(j.perAgent)
	}
	if n := j.perAgent[agent]; j.cfg.MaxCallsPerDay > 0 && n >= j.cfg.MaxCallsPerDay {
		return fmt.Sprintf("over budget (%d calls today for agent %s, max_calls_per_day = %d)", n, agent, j.cfg.MaxCallsPerDay)
	}
	if j.cfg.MaxCallsTotal > 0 && j.calls >= j.cfg.MaxCallsTotal {
		return fmt.Sprintf("over budget (%d calls today, max_calls_per_day_total = %d)", j.calls, j.cfg.MaxCallsTotal)
	}
	j.calls++
	j.perAgent[agent]++
	return ""
}

func (j *Judge) fromCache(key [sha256.Size]byte) (cached, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	c, ok := j.cache[key]
	if !ok || j.now().Sub(c.at) >= CacheTTL || j.now().Before(c.at) {
		return cached{}, false
	}
	return c, true
}

func (j *Judge) store(key [sha256.Size]byte, c cached) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.cache) >= maxCacheEntries {
		for k, e := range j.cache {
			if c.at.Sub(e.at) >= CacheTTL {
				delete(j.cache, k)
			}
		}
		if len(j.cache) >= maxCacheEntries {
			clear(j.cache)
		}
	}
	j.cache[key] = c
}
