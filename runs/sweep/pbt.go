package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/core/search"
	"selmix/internal/boundedfile"
	"selmix/internal/jsonfloat"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// PopulationName is a population-based sweep's log in its folder: one
// decision per line, appended before it is acted on.
const PopulationName = "pbt.log"

var populationFile = boundedfile.Limit{What: "pbt.log", Max: 256 << 20}

// Population decision ops.
const (
	// PBTReport: a member reached its generation's end, with the ψ it
	// is ranked by there.
	PBTReport = "report"
	// PBTExploit: a member continues from another's checkpoint (a fork,
	// the new run Run), with Sets explored from its settings.
	PBTExploit = "exploit"
	// PBTAdvance: every exploit of a generation is recorded; the next
	// generation runs.
	PBTAdvance = "advance"
)

// PBTDecision is one line of a population's log.
type PBTDecision struct {
	Op     string `json:"op"`
	Member int    `json:"member"`
	Gen    int    `json:"gen"`
	// Step and Psi are, for a report, the refresh ranked and its ψ.
	Step int              `json:"step,omitempty"`
	Psi  *jsonfloat.Float `json:"psi,omitempty"`
	// For an exploit: the member copied, the run forked (its id) at its
	// checkpoint at step At, the fork's run name and its settings.
	From   int      `json:"from,omitempty"`
	Parent string   `json:"parent,omitempty"`
	At     int      `json:"at,omitempty"`
	Run    string   `json:"run,omitempty"`
	Sets   []string `json:"sets,omitempty"`
	// Ranked are, under explore = forecast, the candidates the exploit
	// ranked and their forecasts (Sets is the one taken).
	Ranked []Ranked `json:"ranked,omitempty"`
	Time   string   `json:"time"`
}

// Ranked is one candidate of an explore = forecast and the Δψ forecast
// for it (NaN: none).
type Ranked struct {
	Sets     []string        `json:"sets"`
	Forecast jsonfloat.Float `json:"forecast"`
}

// maxRanked bounds the candidates of an exploit a log may hold
// (search.PBTSpec.Candidates is at most 64).
const maxRanked = 64

// PsiValue is a report's ψ (NaN where it has none).
func (d PBTDecision) PsiValue() float64 {
	if d.Psi == nil {
		return math.NaN()
	}
	return float64(*d.Psi)
}

// Population is the state of a population-based sweep, replayed from its
// log: which generation each member has reached, and the run each
// continues in (the last exploit's fork, else its own).
type Population struct {
	p         *search.PBT
	path      string
	members   []search.Member
	Decisions []PBTDecision

	reports  [][]*PBTDecision // [gen][member]
	exploit  []*PBTDecision   // per member, its last exploit
	advanced int              // generations advanced past
}

// Population reads the population of a population-based sweep (empty
// before its first decision). A torn last line is left out; any other
// line the population could not have taken is damage.
func (s *Sweep) Population() (*Population, error) {
	if s.PBT == nil {
		return nil, fmt.Errorf("sweep %s is not population-based", s.ID)
	}
	po := &Population{p: s.PBT, path: filepath.Join(s.Dir, PopulationName), members: s.Members,
		reports: make([][]*PBTDecision, s.PBT.Gens()), exploit: make([]*PBTDecision, len(s.Members))}
	for g := range po.reports {
		po.reports[g] = make([]*PBTDecision, len(s.Members))
	}
	err := readLog(po.path, populationFile, func(line []byte) error {
		var d PBTDecision
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		return po.apply(d)
	})
	if err != nil {
		return nil, err
	}
	return po, nil
}

// check refuses a decision the population could not take now.
func (po *Population) check(d PBTDecision) error {
	n, G := len(po.members), po.p.Gens()
	if d.Member < 0 || d.Member >= n || d.Gen < 0 || d.Gen >= G {
		return fmt.Errorf("member %d, generation %d: out of range", d.Member, d.Gen)
	}
	switch d.Op {
	case PBTReport:
		if d.Gen != po.advanced || po.reports[d.Gen][d.Member] != nil {
			return fmt.Errorf("report of member %d at generation %d out of turn", d.Member, d.Gen)
		}
	case PBTExploit:
		if d.Gen != po.advanced || !po.Ended(d.Gen) || d.Gen >= G-1 || d.From < 0 || d.From >= n || d.From == d.Member ||
			d.Parent == "" || len(d.Parent) > 64 || safetext.Control(d.Parent) >= 0 || strings.ContainsAny(d.Parent, `/\ `) {
			return fmt.Errorf("exploit of member %d at generation %d out of turn or malformed", d.Member, d.Gen)
		}
		// The fork a member's process makes from it: its name and its
		// settings are what an exploit writes, nothing else.
		if want := forkName(po.members[d.Member].Run, d.Gen); d.Run != want {
			return fmt.Errorf("exploit of member %d names run %q, want %q", d.Member, d.Run, want)
		}
		sets := slices.Clone(d.Sets)
		if len(d.Ranked) > maxRanked {
			return fmt.Errorf("exploit of member %d ranks %d candidates: at most %d", d.Member, len(d.Ranked), maxRanked)
		}
		for _, c := range d.Ranked {
			sets = append(sets, c.Sets...)
		}
		for _, kv := range sets {
			k, _, ok := strings.Cut(strings.TrimPrefix(kv, "finetune."), "=")
			if !ok || !strings.HasPrefix(kv, "finetune.") || !slices.Contains(po.p.Keys, k) {
				return fmt.Errorf("exploit of member %d sets %q, not an explored key", d.Member, kv)
			}
		}
	case PBTAdvance:
		if d.Gen != po.advanced || !po.Ended(d.Gen) || d.Gen >= G-1 {
			return fmt.Errorf("advance past generation %d out of turn", d.Gen)
		}
	default:
		return fmt.Errorf("unknown op %q", d.Op)
	}
	return nil
}

// apply takes d into the state, refusing one the population could not
// have taken.
func (po *Population) apply(d PBTDecision) error {
	if err := po.check(d); err != nil {
		return err
	}
	switch d.Op {
	case PBTReport:
		po.reports[d.Gen][d.Member] = &d
	case PBTExploit:
		po.exploit[d.Member] = &d
	case PBTAdvance:
		po.advanced++
	}
	po.Decisions = append(po.Decisions, d)
	return nil
}

// take records d in the log, then in the state.
func (po *Population) take(d PBTDecision) error {
	d.Time = time.Now().Format(time.RFC3339)
	if err := po.check(d); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := appendLine(po.path, b); err != nil {
		return err
	}
	return po.apply(d)
}

// Gen is the generation the population runs: the first whose exploits
// are not all recorded.
func (po *Population) Gen() int { return po.advanced }

// Ended reports whether every member has reported at generation g.
func (po *Population) Ended(g int) bool {
	for _, r := range po.reports[g] {
		if r == nil {
			return false
		}
	}
	return true
}

// Complete reports whether every member has reported at the last
// generation: the sweep is done.
func (po *Population) Complete() bool {
	return po.advanced == po.p.Gens()-1 && po.Ended(po.advanced)
}

// Reported is member i's report at generation g, nil if none.
func (po *Population) Reported(i, g int) *PBTDecision { return po.reports[g][i] }

// Report records that member i reached generation g's end, ranked by psi
// at the refresh at step.
func (po *Population) Report(i, g, step int, psi float64) error {
	f := jsonfloat.Float(psi)
	return po.take(PBTDecision{Op: PBTReport, Member: i, Gen: g, Step: step, Psi: &f})
}

// Exploited is member i's last exploit, nil if it runs in its own run.
func (po *Population) Exploited(i int) *PBTDecision { return po.exploit[i] }

// RunName is the name of the run member i continues in: its last
// exploit's fork, else the member's own.
func (po *Population) RunName(i int) string { return po.RunNameAt(i, po.p.Gens()) }

// RunNameAt is the name of the run member i ran generation g in: the fork
// of its last exploit before g, else its own.
func (po *Population) RunNameAt(i, g int) string {
	name := po.members[i].Run
	for _, d := range po.Decisions {
		if d.Op == PBTExploit && d.Member == i && d.Gen < g {
			name = d.Run
		}
	}
	return name
}

// Exploit records an exploit of generation g: member e.Member continues
// from parent (member e.From's run) at its checkpoint at step at, in a
// new run named after the member and the generation it starts.
func (po *Population) Exploit(g int, e search.Exploit, parent string, at int) error {
	var ranked []Ranked
	for _, c := range e.Ranked {
		ranked = append(ranked, Ranked{Sets: c.Sets, Forecast: jsonfloat.Float(c.Forecast)})
	}
	return po.take(PBTDecision{Op: PBTExploit, Member: e.Member, Gen: g, From: e.From, Parent: parent, At: at, Run: forkName(po.members[e.Member].Run, g), Sets: e.Sets, Ranked: ranked})
}

// forkName is the run a member whose run is named run continues in after
// an exploit at the end of generation g.
func forkName(run string, g int) string { return fmt.Sprintf("%s-g%d", run, g+1) }

// Advance records that generation g's exploits are all recorded.
func (po *Population) Advance(g int) error {
	return po.take(PBTDecision{Op: PBTAdvance, Gen: g})
}

// Lineage is member i's runs, first to last: its own, then each fork.
func (po *Population) Lineage(i int) []string {
	out := []string{po.members[i].Run}
	for _, d := range po.Decisions {
		if d.Op == PBTExploit && d.Member == i {
			out = append(out, d.Run)
		}
	}
	return out
}

// GenPsi is what ranks member i at generation g: the validation ψ (of the
// plan's metric, else of the objective it optimizes) at the last refresh
// at or before the generation's end in the run it continues in, and that
// refresh's step. It is an error when the run has not reached the end.
func (s *Sweep) GenPsi(po *Population, i, g int) (psi float64, at int, err error) {
	upTo := s.PBT.End(g)
	name := po.RunNameAt(i, g)
	r, err := s.runNamed(name)
	if err != nil {
		return 0, 0, err
	}
	if r == nil {
		return 0, 0, fmt.Errorf("member %d has no run %s", i, name)
	}
	h, err := record.Load(r)
	if err != nil {
		return 0, 0, err
	}
	return rankAt(h, r.Meta.ID, i, upTo, s.PBT.Metric)
}

// Settings are the researcher's hyperparameters in force in member i's
// run at the end of generation g (Hyper.Get text by key, the explored
// keys; not the engine's own under finetune.adapt: researcher), and the
// run's id: what an exploit copies.
func (s *Sweep) Settings(po *Population, i, g int) (map[string]string, string, error) {
	name := po.RunNameAt(i, g)
	r, err := s.runNamed(name)
	if err != nil {
		return nil, "", fmt.Errorf("member %d: %v", i, err)
	}
	if r == nil {
		return nil, "", fmt.Errorf("member %d has no run %s", i, name)
	}
	h, err := record.Load(r)
	if err != nil {
		return nil, "", err
	}
	upTo := s.PBT.End(g)
	if !slices.ContainsFunc(h.Refreshes, func(rf record.RefreshEvent) bool { return rf.Step <= upTo }) {
		return nil, "", fmt.Errorf("member %d: run %s has no refresh at or before step %d", i, r.Meta.ID, upTo)
	}
	rs, err := researcherOf(r, h)
	if err != nil {
		return nil, "", err
	}
	hy, err := rs.at(upTo)
	if err != nil {
		return nil, "", err
	}
	vals := map[string]string{}
	for _, k := range s.PBT.Keys {
		vals[k], _ = hy.Get(k)
	}
	return vals, r.Meta.ID, nil
}

// researcher is the researcher's settings over a run: its configuration
// with every control applied as of a step but the engine's own
// (finetune.adapt moves lr and refresh within the researcher's, and a
// refresh's Hyper holds the engine's). A copy explores around the
// researcher's settings, as a fork starts from them.
type researcher struct {
	id   string
	base loop.Hyper
	acks []loop.Ack
}

// researcherOf reads run r's configuration; h is its log.
func researcherOf(r *runs.Run, h *record.History) (*researcher, error) {
	text, err := r.Config()
	if err != nil {
		return nil, err
	}
	c, err := experiment.ParseRecorded(text, filepath.Join(r.Dir, "config.toml"))
	if err != nil {
		return nil, err
	}
	return &researcher{id: r.Meta.ID, base: c.Finetune.Hyper, acks: h.Controls}, nil
}

// at is the researcher's settings at step.
func (rs *researcher) at(step int) (loop.Hyper, error) {
	hy := rs.base
	for _, a := range rs.acks {
		if a.Step <= step && a.Err == "" && a.Control.Op == loop.OpSet && !a.Control.Auto() {
			if err := hy.Set(a.Control.Key, a.Control.Value); err != nil {
				return hy, fmt.Errorf("run %s: control %s at step %d: %v", rs.id, a.Control.Tagged(), a.Step, err)
			}
		}
	}
	return hy, nil
}
