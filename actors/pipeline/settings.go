package pipeline

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/retention"
	"github.com/wheelmq/wheelmq/actors/txcheck"
	"github.com/wheelmq/wheelmq/storage/meta"
)

// Settings are the broker settings that can change while it runs
// (UPDATE_BROKER_CONFIG, served by netloop/router). They start as the
// Config's values; a change stores a new snapshot whole (UpdateSettings),
// so a reader sees all of one version, and a stage reads the snapshot in
// force each time it needs a value (none keeps a copy, so a supervisor
// restart keeps the changes). Changes are not persisted: a restart starts
// from the Config again.
//
// Where each value takes effect: the request router reads MaxMessageSize,
// AutoCreateTopic, AutoCreateGroup and MaxInflightPerConn for every
// request; the pull stage reads MaxParkedPullsPerConn for every long poll
// it parks; the retention stage reads the retention and disk values at
// every disk sample (each second: the full ratio) and every round; the
// transaction stage reads its three when it plans a check (a check already
// planned keeps its time).
type Settings struct {
	// Version counts the changes (RocketMQ's configuration DataVersion:
	// Timestamp is the time of the last change, or of the start).
	Version meta.DataVersion

	MaxMessageSize        int
	AutoCreateTopic       bool
	AutoCreateGroup       bool
	MaxInflightPerConn    int64
	MaxParkedPullsPerConn int
	// TopicMessageTypeCheck and MixedMessageType are Config's, read by the
	// router for every send and topic update.
	TopicMessageTypeCheck bool
	MixedMessageType      bool

	Retention           time.Duration
	RetentionAt         string
	DiskCleanRatio      float64
	DiskForceCleanRatio float64
	DiskFullRatio       float64

	TransactionTimeout       time.Duration
	TransactionCheckInterval time.Duration
	TransactionCheckMax      int

	// LogLevel is the level of the broker's logs in force; it changes
	// only through Config.SetLogLevel.
	LogLevel zerolog.Level

	schedule retention.Schedule // RetentionAt parsed
}

// settingsState holds the snapshot in force.
type settingsState struct {
	cur atomic.Pointer[Settings]
	// mu serializes UpdateSettings: it is held to copy, check and store a
	// snapshot (no I/O, no waiting), so an event loop may take it.
	mu sync.Mutex
}

// initSettings takes the first snapshot from the Config (after Validate),
// with the force-clean ratio clamped between the clean and full ratios as
// the retention stage has always applied it.
func (p *Pipeline) initSettings(now time.Time) error {
	c := &p.cfg
	s := &Settings{
		Version:        meta.DataVersion{Timestamp: now.UnixMilli()},
		MaxMessageSize: c.MaxMessageSize, AutoCreateTopic: c.AutoCreateTopic, AutoCreateGroup: c.AutoCreateGroup,
		MaxInflightPerConn: c.MaxInflightPerConn, MaxParkedPullsPerConn: c.MaxParkedPullsPerConn,
		TopicMessageTypeCheck: c.TopicMessageTypeCheck, MixedMessageType: c.MixedMessageType,
		Retention: c.Retention, RetentionAt: c.RetentionAt, DiskCleanRatio: c.DiskCleanRatio,
		DiskForceCleanRatio: max(min(c.DiskForceCleanRatio, c.DiskFullRatio), c.DiskCleanRatio),
		DiskFullRatio:       c.DiskFullRatio,
		TransactionTimeout:  c.TransactionTimeout, TransactionCheckInterval: c.TransactionCheckInterval,
		TransactionCheckMax: c.TransactionCheckMax,
		LogLevel:            max(c.Logger.GetLevel(), zerolog.GlobalLevel()),
	}
	if err := p.checkSettings(s); err != nil {
		return fmt.Errorf("broker config: %w", err)
	}
	p.settings.cur.Store(s)
	return nil
}

// Settings returns the snapshot in force. Safe from any goroutine; the
// caller must not modify it.
func (p *Pipeline) Settings() *Settings { return p.settings.cur.Load() }

// UpdateSettings applies change to a copy of the snapshot in force, checks
// the result and, when it is valid, stores it with the next version and
// returns it; otherwise it returns the error and nothing changes. A new
// log level is handed to Config.SetLogLevel. Safe from any goroutine; it
// does not block (see settingsState.mu).
func (p *Pipeline) UpdateSettings(change func(*Settings)) (*Settings, error) {
	p.settings.mu.Lock()
	defer p.settings.mu.Unlock()
	old := p.settings.cur.Load()
	next := *old
	change(&next)
	if next.LogLevel != old.LogLevel && p.cfg.SetLogLevel == nil {
		return old, errors.New("the log level of this broker is fixed by its process")
	}
	if err := p.checkSettings(&next); err != nil {
		return old, err
	}
	next.Version = old.Version.Next(time.Now())
	if next.LogLevel != old.LogLevel {
		p.cfg.SetLogLevel(next.LogLevel)
	}
	p.settings.cur.Store(&next)
	return &next, nil
}

// checkSettings reports every invalid value of s at once and sets its
// parsed schedule.
func (p *Pipeline) checkSettings(s *Settings) error {
	var errs []error
	if limit := p.cfg.MaxMessageSizeLimit(); s.MaxMessageSize < 1 || s.MaxMessageSize > limit {
		errs = append(errs, fmt.Errorf("max message size %d must be in 1..%d (the frame and segment sizes this broker started with)",
			s.MaxMessageSize, limit))
	}
	if s.MaxInflightPerConn <= 0 || s.MaxParkedPullsPerConn <= 0 {
		errs = append(errs, fmt.Errorf("max unanswered requests per connection %d and max parked pulls per connection %d must be > 0",
			s.MaxInflightPerConn, s.MaxParkedPullsPerConn))
	}
	if s.Retention < 0 {
		errs = append(errs, fmt.Errorf("retention %s must be >= 0 (0: no limit by age)", s.Retention))
	}
	sched, err := retention.ParseSchedule(s.RetentionAt)
	if err != nil {
		errs = append(errs, err)
	}
	s.schedule = sched
	for _, r := range []float64{s.DiskCleanRatio, s.DiskForceCleanRatio, s.DiskFullRatio} {
		if !(r > 0 && r <= 1) {
			errs = append(errs, fmt.Errorf("disk ratio %v must be in (0, 1]", r))
		}
	}
	if !(s.DiskCleanRatio <= s.DiskForceCleanRatio && s.DiskForceCleanRatio <= s.DiskFullRatio) {
		errs = append(errs, fmt.Errorf("disk ratios must not fall from clean (%v) to force-clean (%v) to full (%v)",
			s.DiskCleanRatio, s.DiskForceCleanRatio, s.DiskFullRatio))
	}
	if s.TransactionTimeout <= 0 || s.TransactionCheckInterval <= 0 || s.TransactionCheckMax <= 0 {
		errs = append(errs, fmt.Errorf("transaction timeout %s, check interval %s and check max %d must be > 0",
			s.TransactionTimeout, s.TransactionCheckInterval, s.TransactionCheckMax))
	}
	return errors.Join(errs...)
}

// retentionLive is the retention stage's policy and full ratio in force.
func (p *Pipeline) retentionLive() (retention.Policy, float64) {
	s := p.Settings()
	return retention.Policy{
		Retention: s.Retention, Schedule: s.schedule, CleanRatio: s.DiskCleanRatio, ForceRatio: s.DiskForceCleanRatio,
		MaxPerRound: 10,
	}, s.DiskFullRatio
}

// transactionLive is the transaction stage's tuning in force.
func (p *Pipeline) transactionLive() txcheck.Tuning {
	s := p.Settings()
	return txcheck.Tuning{Timeout: s.TransactionTimeout, CheckInterval: s.TransactionCheckInterval, MaxChecks: s.TransactionCheckMax}
}
