// Command livetest drives a live Backfiller server with the generated Go client, the way
// tests/acceptance/test_go_client.py runs it: BACKFILLER_URL (a server without auth, no
// daemon), BACKFILLER_AUTH_URL (the same database, --auth token) and BACKFILLER_TOKEN (an
// operator's token). It prints "ok <step>" per step and exits 1 at the first failure.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	gqlclient "git.sr.ht/~emersion/gqlclient"

	"backfiller/clients/go/backfiller"
)

func check(step string, err error) {
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", step, err)
		os.Exit(1)
	}
	fmt.Printf("ok %s\n", step)
}

func expect(cond bool, format string, args ...interface{}) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

func launchInput(job string, partitions backfiller.PartitionSelectionInput) backfiller.LaunchBackfillInput {
	return backfiller.LaunchBackfillInput{Target: backfiller.JobTarget(job), Partitions: partitions}
}

func main() {
	ctx := context.Background()
	client := backfiller.NewClient(os.Getenv("BACKFILLER_URL"), "")

	// @oneOf inputs: each constructor sends exactly one field.
	for _, c := range []struct {
		value interface{}
		want  string
	}{
		{backfiller.RangeSelection("a", "b"), `{"range":{"start":"a","end":"b"}}`},
		{backfiller.KeysSelection("x"), `{"keys":["x"]}`},
		{backfiller.AllSelection(), `{"all":true}`},
		{backfiller.JobTarget("daily_sales"), `{"job":"daily_sales"}`},
	} {
		sent, _ := json.Marshal(c.value)
		check("oneOf sends "+c.want, expect(string(sent) == c.want, "sent %s", sent))
	}

	preview, err := backfiller.Preview(ctx, client, launchInput("daily_sales", backfiller.RangeSelection("2024-01-01", "2024-01-10")))
	check("preview", firstError(err, expect(err != nil || preview.Runs == 10, "preview %+v", preview)))

	config := backfiller.JSON(`{"currency":"EUR"}`)
	input := launchInput("region_report", backfiller.AllSelection())
	input.RunConfig = &config
	all, err := backfiller.Launch(ctx, client, input)
	check("launch all", err)
	var readConfig map[string]string
	check("JSON run config read back", firstError(
		json.Unmarshal(*all.RunConfig, &readConfig),
		expect(readConfig["currency"] == "EUR", "runConfig %s", *all.RunConfig)))
	check("DateTime is a time", expect(time.Since(all.CreatedAt) < time.Hour && time.Since(all.CreatedAt) > -time.Hour, "createdAt %v", all.CreatedAt))

	keys, err := backfiller.Launch(ctx, client, launchInput("daily_sales", backfiller.KeysSelection("2024-03-01", "2024-03-05")))
	check("launch keys", err)

	// An enum value added to the schema later arrives intact instead of failing the decoding:
	// the real server's answer, with one enum value replaced as a later server may send it.
	future, err := answerWithStatusReplaced(os.Getenv("BACKFILLER_URL"), keys.Id, "REQUESTED", "SOMETHING_NEW")
	check("unknown enum value tolerated", firstError(err, expect(future.Status == "SOMETHING_NEW" && future.Counts.Total == 2, "backfill %+v", future)))

	ranged, err := backfiller.Launch(ctx, client, launchInput("daily_sales", backfiller.RangeSelection("2024-02-01", "2024-02-29")))
	check("launch range", err)

	read, err := backfiller.GetBackfill(client, ctx, ranged.Id)
	check("read with counts", firstError(err, expect(err != nil || (read.Counts.Total == 29 && read.Counts.Pending == 29), "counts %+v", read.Counts)))

	seen := map[string]bool{}
	var after *string
	pages := 0
	for {
		page, err := backfiller.ListBackfills(client, ctx, 2, after, nil)
		check(fmt.Sprintf("list page %d", pages+1), err)
		pages++
		for _, b := range page.Nodes {
			seen[b.Id] = true
		}
		if !page.PageInfo.HasNextPage {
			break
		}
		after = page.PageInfo.EndCursor
	}
	check("list with paging", expect(pages >= 2 && seen[all.Id] && seen[keys.Id] && seen[ranged.Id], "%d pages, %v", pages, seen))

	paused, err := backfiller.Pause(ctx, client, ranged.Id)
	check("pause", firstError(err, expect(err != nil || paused.Status == backfiller.BackfillStatusPaused, "status %s", statusOf(paused))))
	resumed, err := backfiller.Resume(ctx, client, ranged.Id)
	check("resume", firstError(err, expect(err != nil || resumed.Status != backfiller.BackfillStatusPaused, "status %s", statusOf(resumed))))
	canceled, err := backfiller.Cancel(ctx, client, ranged.Id)
	check("cancel", firstError(err, expect(err != nil || canceled.Status == backfiller.BackfillStatusCanceled || canceled.Status == backfiller.BackfillStatusCanceling, "status %s", statusOf(canceled))))
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if read, err = backfiller.GetBackfill(client, ctx, ranged.Id); err == nil && read.Status == backfiller.BackfillStatusCanceled {
			break
		}
	}
	retried, err := backfiller.Retry(ctx, client, backfiller.RetryBackfillInput{
		Id: ranged.Id, Include: []backfiller.RetryInclude{backfiller.RetryIncludeCanceled, backfiller.RetryIncludeNotRun},
	})
	check("retry", firstError(err, expect(err != nil || (retried.Parent != nil && retried.Parent.Id == ranged.Id), "retried %+v", retried)))

	_, err = backfiller.Launch(ctx, client, launchInput("no_such_job", backfiller.AllSelection()))
	var userErrors backfiller.UserErrors
	check("userErrors are typed", expect(errors.As(err, &userErrors) && userErrors.Codes()[0] == backfiller.UserErrorCodeJobNotFound, "error %v", err))
	_, err = backfiller.Launch(ctx, client, launchInput("daily_sales", backfiller.RangeSelection("2024-01-10", "2024-01-01")))
	check("userErrors carry the field", expect(errors.As(err, &userErrors) && len(userErrors[0].Field) > 0, "error %v", err))

	limit, priority, title := int32(2), int32(7), "go client, updated"
	updated, err := backfiller.Update(ctx, client, backfiller.UpdateBackfillInput{
		Id: keys.Id, MaxConcurrentRuns: &limit, Priority: &priority, Title: &title,
	})
	check("update", firstError(err, expect(err != nil || (*updated.MaxConcurrentRuns == 2 && updated.Priority == 7 && *updated.Title == title), "updated %+v", updated)))
	reread, err := backfiller.GetBackfill(client, ctx, keys.Id)
	check("update read back", firstError(err, expect(err != nil || (*reread.MaxConcurrentRuns == 2 && reread.Priority == 7 && *reread.Title == title), "read %+v", reread)))
	tooMany := int32(0)
	_, err = backfiller.Update(ctx, client, backfiller.UpdateBackfillInput{Id: keys.Id, MaxConcurrentRuns: &tooMany})
	check("update refuses a limit of 0", expect(errors.As(err, &userErrors) && userErrors.Codes()[0] == backfiller.UserErrorCodeInvalidArgument, "error %v", err))

	marked, err := backfiller.Mark(ctx, client, backfiller.MarkPartitionsInput{
		Target: backfiller.JobTarget("daily_sales"), Partitions: backfiller.KeysSelection("2025-06-02"),
		Status: backfiller.PartitionMarkStatusSkipped, Reason: "go client: a known-bad day",
	})
	check("mark a partition skipped", firstError(err, expect(marked == 1, "marked %d", marked)))
	_, err = backfiller.Mark(ctx, client, backfiller.MarkPartitionsInput{
		Target: backfiller.JobTarget("daily_sales"), Partitions: backfiller.KeysSelection("2025-06-02"),
		Status: backfiller.PartitionMarkStatusSkipped, Reason: "  ",
	})
	check("mark refuses a blank reason", expect(errors.As(err, &userErrors) && userErrors.Codes()[0] == backfiller.UserErrorCodeInvalidArgument, "error %v", err))

	secured := backfiller.NewClient(os.Getenv("BACKFILLER_AUTH_URL"), os.Getenv("BACKFILLER_TOKEN"))
	withToken, err := backfiller.Launch(ctx, secured, launchInput("daily_sales", backfiller.KeysSelection("2024-04-01")))
	check("a token", firstError(err, expect(err != nil || (withToken.Creator != nil && *withToken.Creator == "go-operator"), "creator %v", withToken)))
	_, err = backfiller.Launch(ctx, backfiller.NewClient(os.Getenv("BACKFILLER_AUTH_URL"), ""), launchInput("daily_sales", backfiller.AllSelection()))
	var graphqlError *gqlclient.Error
	check("no token is refused", expect(err != nil && !errors.As(err, &userErrors), "error %v (%T)", err, graphqlError))
}

func statusOf(b *backfiller.Backfill) backfiller.BackfillStatus {
	if b == nil {
		return ""
	}
	return b.Status
}

// answerWithStatusReplaced reads a backfill from the server over plain HTTP, replaces the enum
// value from by to in the answer, and decodes it into the generated type.
func answerWithStatusReplaced(url, id, from, to string) (*backfiller.Backfill, error) {
	query, _ := json.Marshal(map[string]interface{}{
		"query":     `query($id: ID!) { backfill(id: $id) { id status createdAt counts { total } } }`,
		"variables": map[string]string{"id": id},
	})
	response, err := http.Post(url+"/graphql/v1", "application/json", bytes.NewReader(query))
	if err != nil {
		return nil, err
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, err
	}
	replaced := bytes.ReplaceAll(body, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
	var answer struct {
		Data struct{ Backfill backfiller.Backfill }
	}
	if err := json.Unmarshal(replaced, &answer); err != nil {
		return nil, err
	}
	return &answer.Data.Backfill, nil
}

// firstError is the first of errs that is not nil (errors.Join needs Go 1.20; Debian 12 has 1.19).
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
