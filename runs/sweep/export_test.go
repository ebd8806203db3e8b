package sweep

// MemberBusy exposes memberBusy to the external tests.
func (s *Sweep) MemberBusy(i int) bool { return s.memberBusy(i) }
