package workbench

import (
	"fmt"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/internal/fixture"
)

// BenchmarkView times one full-screen frame at 200×60. "step" is the
// common frame (a step snapshot: new progress, same G and P); "refresh"
// is the worst case, a new evaluation every frame (at K = 1000 it
// includes the O(K²) gains and block sums the panes derive in Update).
// The target is ≤ 10 ms per frame at K = 1000.
func BenchmarkView(b *testing.B) {
	for _, K := range []int{10, 100, 1000} {
		refreshes := make([]loop.Snapshot, 4)
		for i := range refreshes {
			refreshes[i] = fixture.Refresh(K, 40+i, 10000, metric.MinRecall)
		}
		b.Run(fmt.Sprintf("K=%d/step", K), func(b *testing.B) {
			m := newRunningColor(b, K, 200, 60, &recorder{}, true)
			step := m.Run().Latest
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				step.Step++
				m.Update(SnapshotMsg{step})
				_ = m.View()
			}
		})
		b.Run(fmt.Sprintf("K=%d/refresh", K), func(b *testing.B) {
			m := newRunningColor(b, K, 200, 60, &recorder{}, true)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%200 == 0 {
					// Keep the history at a realistic length (10k steps).
					b.StopTimer()
					m = newRunningColor(b, K, 200, 60, &recorder{}, true)
					b.StartTimer()
				}
				m.Update(SnapshotMsg{refreshes[i%len(refreshes)]})
				_ = m.View()
			}
		})
	}
}
