package telegramtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// Taps made at the same moment all reach a bot that confirms each batch
// with the next offset, as the real Bot API guarantees: an update id is
// given as the update is queued, so a later id is never queued (and
// confirmed) before an earlier one, which the next offset would drop.
func TestPress_ConcurrentTapsAllDelivered(t *testing.T) {
	fake := telegramtest.New(t, telegramtest.Options{})
	defer fake.Close()
	const taps = 500
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range taps {
		wg.Go(func() {
			q := fake.Press(tgbotapi.User{ID: int64(i + 1)}, -100, 1, fmt.Sprint("tap", i))
			mu.Lock()
			want[q] = true
			mu.Unlock()
		})
	}
	seen := map[string]bool{}
	offset := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for drained := false; ; {
		select {
		case <-done:
			drained = true
		default:
		}
		v := url.Values{"offset": {fmt.Sprint(offset)}, "timeout": {"0"}}
		resp, err := http.PostForm(fmt.Sprintf(fake.Endpoint(), telegramtest.DefaultToken, "getUpdates"), v)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Result []tgbotapi.Update `json:"result"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range body.Result {
			seen[u.CallbackQuery.ID] = true
			offset = max(offset, u.UpdateID+1)
		}
		if drained && len(body.Result) == 0 {
			break
		}
	}
	for q := range want {
		if !seen[q] {
			t.Errorf("tap %s never delivered (%d of %d seen)", q, len(seen), taps)
		}
	}
}
