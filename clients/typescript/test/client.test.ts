// The client against live servers that tests/acceptance/test_typescript_client.py starts:
// BACKFILLER_URL (auth off), BACKFILLER_AUTH_URL (--auth token) with an operator token in
// BACKFILLER_TOKEN and a viewer token in BACKFILLER_VIEWER_TOKEN, and BACKFILLER_DOWN_URL
// where nothing listens.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";

import { AuthError, Client, TransportError, UserErrorsError, assetsTarget } from "../src/index.js";
import type { BackfillStatus, LaunchBackfillInput } from "../src/index.js";

function env(name: string): string {
  const value = process.env[name];
  assert.ok(value, `${name} must be set (the pytest wrapper starts the server)`);
  return value;
}

const client = new Client({ url: env("BACKFILLER_URL") });

function week(tag: string): LaunchBackfillInput {
  return {
    target: { job: "daily_sales" },
    partitions: { range: { start: "2024-03-01", end: "2024-03-07" } },
    tags: [{ key: "suite", value: tag }],
    title: "typescript client",
  };
}

describe("launch, read and steer a backfill", () => {
  it("launches, lists, pauses, resumes, cancels and retries", async () => {
    const tag = randomUUID();
    const launched = await client.launch({ ...week(tag), idempotencyKey: tag });
    assert.equal(launched.status, "REQUESTED");
    assert.equal(launched.counts.total, 7);
    assert.deepEqual(launched.tags, [{ key: "suite", value: tag }]);

    const again = await client.launch({ ...week(tag), idempotencyKey: tag });
    assert.equal(again.id, launched.id);

    const detail = await client.get(launched.id);
    assert.ok(detail);
    assert.deepEqual(detail.partitionStatusRanges, [
      { status: "PENDING", startKey: "2024-03-01", endKey: "2024-03-07", startIndex: 0, count: 7 },
    ]);

    const page = await client.list({ tag: { key: "suite", value: tag }, first: 5 });
    assert.deepEqual(
      page.backfills.map((b) => b.id),
      [launched.id],
    );
    assert.equal(page.hasNextPage, false);

    assert.equal((await client.pause(launched.id)).status, "PAUSED");
    const paused = await client.list({ statuses: ["PAUSED"], job: "daily_sales", first: 100 });
    assert.ok(paused.backfills.some((b) => b.id === launched.id));
    assert.equal((await client.resume(launched.id)).status, "REQUESTED");
    assert.equal((await client.cancel(launched.id)).status, "CANCELED");

    const child = await client.retry(launched.id, { include: ["CANCELED", "NOT_RUN"] });
    assert.deepEqual(child.parent, { id: launched.id });
    assert.equal(child.counts.total, 7);
  });

  it("pages through backfills with the end cursor", async () => {
    const tag = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await client.launch(week(tag))).id);
    }
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await client.list({ tag: { key: "suite", value: tag }, first: 2, after });
      seen.push(...page.backfills.map((b) => b.id));
      if (!page.hasNextPage) break;
      after = page.endCursor;
    }
    assert.deepEqual(seen, ids.reverse());
  });

  it("previews without launching", async () => {
    const preview = await client.preview(week(randomUUID()));
    assert.equal(preview.job, "daily_sales");
    assert.equal(preview.total, 7);
    assert.equal(preview.firstPartitions[0], "2024-03-01");
  });
});

describe("change a backfill and mark partitions", () => {
  it("updates a backfill's limit, priority and title, and reads them back", async () => {
    const launched = await client.launch({ ...week(randomUUID()), maxConcurrentRuns: 5 });
    const updated = await client.update(launched.id, { maxConcurrentRuns: 2, priority: 7, title: "updated" });
    assert.deepEqual([updated.maxConcurrentRuns, updated.priority, updated.title], [2, 7, "updated"]);
    const read = await client.get(launched.id);
    assert.deepEqual([read?.maxConcurrentRuns, read?.priority, read?.title], [2, 7, "updated"]);
    const untitled = await client.update(launched.id, { title: null });
    assert.deepEqual([untitled.title, untitled.maxConcurrentRuns], [null, 2]);

    const refused = await client.update(launched.id, { maxConcurrentRuns: 0 }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof UserErrorsError);
    assert.equal(refused.code, "INVALID_ARGUMENT");
    assert.equal((await client.get(launched.id))?.maxConcurrentRuns, 2);
    await client.cancel(launched.id);
  });

  it("marks a partition skipped with a reason; a blank reason is a typed userError", async () => {
    const input = {
      target: { job: "daily_sales" },
      partitions: { keys: ["2025-06-01"] },
      status: "SKIPPED" as const,
      reason: "typescript client: a known-bad day",
    };
    assert.equal(await client.markPartitions(input), 1);
    const refused = await client.markPartitions({ ...input, reason: " " }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(refused instanceof UserErrorsError);
    assert.equal(refused.code, "INVALID_ARGUMENT");
    assert.deepEqual(refused.userErrors[0]?.field, ["reason"]);
  });
});

describe("assets", () => {
  it("reads the graph and one asset", async () => {
    const assets = await client.assets();
    assert.deepEqual(
      assets.map((a) => a.name),
      ["raw_events", "daily_visits", "monthly_report", "visits_summary"],
    );
    assert.deepEqual(assets[1]?.upstream, ["raw_events"]);
    assert.equal(assets[3]?.partitions, null);
    const visits = await client.asset("daily_visits", { first: 10 });
    assert.ok(visits);
    assert.deepEqual(visits.downstream, ["monthly_report"]);
    assert.equal(visits.partitions?.cadence, "daily");
    assert.ok(Array.isArray(visits.latestStatuses));
    assert.equal(await client.asset("no_such_asset"), null);
  });

  it("previews and launches an asset backfill, read per asset", async () => {
    const input: LaunchBackfillInput = {
      target: assetsTarget(["daily_visits"], { downstream: true }),
      partitions: { range: { start: "2024-03-01", end: "2024-03-31" } },
    };
    const preview = await client.preview(input);
    assert.deepEqual(
      preview.assets?.map((a) => [a.name, a.level, a.total]),
      [
        ["daily_visits", 0, 31],
        ["monthly_report", 1, 1],
        ["visits_summary", 2, 1],
      ],
    );
    const launched = await client.launch(input);
    assert.equal(launched.target.job, null);
    assert.deepEqual(launched.target.assets?.assets, ["daily_visits", "monthly_report", "visits_summary"]);
    assert.equal(launched.counts.total, 33);
    const detail = await client.get(launched.id);
    assert.deepEqual(
      detail?.assets.map((a) => [a.name, a.level, a.counts.total, a.counts.pending]),
      [
        ["daily_visits", 0, 31, 31],
        ["monthly_report", 1, 1, 1],
        ["visits_summary", 2, 1, 1],
      ],
    );
    await client.cancel(launched.id);
  });

  it("an unknown asset is a typed userError", async () => {
    const refused = await client
      .launch({ ...week("x"), target: assetsTarget(["no_such_asset"]) })
      .then(() => null, (e: unknown) => e);
    assert.ok(refused instanceof UserErrorsError);
    assert.equal(refused.code, "ASSET_NOT_FOUND");
  });
});

describe("enum values added to the schema later", () => {
  // The real server's answer with one enum value replaced: what a later server may send.
  function replacing(from: string, to: string): typeof fetch {
    return async (input, init) => {
      const answer = await fetch(input, init);
      const text = (await answer.text()).replaceAll(`"${from}"`, `"${to}"`);
      return new Response(text, { status: answer.status, headers: answer.headers });
    };
  }

  function label(status: BackfillStatus): string {
    switch (status) {
      case "COMPLETED_SUCCESS":
      case "COMPLETED_FAILED":
      case "CANCELED":
      case "FAILED":
        return "finished";
      case "REQUESTED":
      case "RUNNING":
      case "PAUSED":
      case "CANCELING":
        return "active";
      case "%future added value":
        return "unknown";
      default:
        // A value this client was not generated with: the type has no name for it.
        return "unknown";
    }
  }

  it("reads a value it does not know instead of failing", async () => {
    const launched = await client.launch(week(randomUUID()));
    const future = new Client({ url: env("BACKFILLER_URL"), fetch: replacing("REQUESTED", "SOMETHING_NEW") });
    const read = await future.get(launched.id);
    assert.ok(read);
    assert.equal(read.status as string, "SOMETHING_NEW");
    assert.equal(label(read.status), "unknown");
    assert.equal(label(launched.status), "active");
    assert.equal(read.counts.total, 7);
    const ranges = new Client({ url: env("BACKFILLER_URL"), fetch: replacing("PENDING", "SOMETHING_NEW") });
    assert.equal((await ranges.get(launched.id))?.partitionStatusRanges[0]?.status as string, "SOMETHING_NEW");
    await client.cancel(launched.id);
  });
});

describe("triggers", () => {
  it("lists triggers and evaluates one, dry and for real", async () => {
    const names = (await client.triggers()).map((t) => t.name);
    assert.deepEqual(names.sort(), ["may_week", "quiet"]);

    const dry = await client.evaluateTrigger("may_week", { dryRun: true });
    assert.equal(dry.dryRun, true);
    assert.equal(dry.outcome, "LAUNCHED");
    assert.deepEqual(dry.backfills, []);
    assert.equal(dry.requests[0]?.preview?.total, 7);

    const real = await client.evaluateTrigger("may_week");
    assert.equal(real.outcome, "LAUNCHED");
    assert.equal(real.backfills.length, 1);
    assert.equal(real.backfills[0]?.title, "May week");

    const skipped = await client.evaluateTrigger("quiet");
    assert.equal(skipped.outcome, "SKIPPED");
    assert.equal(skipped.skipReason, "nothing landed");

    await assert.rejects(client.evaluateTrigger("no_such_trigger"), (e: unknown) => {
      assert.ok(e instanceof UserErrorsError);
      assert.equal(e.code, "TRIGGER_NOT_FOUND");
      return true;
    });
  });
});

describe("expected failures are typed userErrors", () => {
  it("an unknown job", async () => {
    const refused = await client
      .launch({ ...week("x"), target: { job: "no_such_job" } })
      .then(() => null, (e: unknown) => e);
    assert.ok(refused instanceof UserErrorsError);
    assert.equal(refused.code, "JOB_NOT_FOUND");
    assert.deepEqual(refused.userErrors[0]?.field, ["target", "job"]);
  });

  it("an unknown backfill", async () => {
    assert.equal(await client.get("bf_999999999"), null);
    await assert.rejects(client.pause("bf_999999999"), (e: unknown) => {
      assert.ok(e instanceof UserErrorsError);
      assert.ok(e.has("BACKFILL_NOT_FOUND"));
      return true;
    });
  });

  it("a state that does not allow the change", async () => {
    const launched = await client.launch(week(randomUUID()));
    await assert.rejects(client.retry(launched.id), (e: unknown) => {
      assert.ok(e instanceof UserErrorsError);
      assert.equal(e.code, "INVALID_STATE");
      return true;
    });
  });

  it("a bad cursor is a GraphQL-level error", async () => {
    await assert.rejects(client.list({ after: "not-a-cursor" }), (e: unknown) => {
      assert.ok(e instanceof TransportError);
      assert.equal(e.errors[0]?.extensions?.code, "INVALID_ARGUMENT");
      return true;
    });
  });
});

describe("transport", () => {
  it("a server that is down is a TransportError", async () => {
    const down = new Client({ url: env("BACKFILLER_DOWN_URL"), timeoutMs: 5_000 });
    await assert.rejects(down.get("bf_1"), TransportError);
  });
});

describe("bearer tokens", () => {
  it("a good token launches, a viewer is forbidden, a bad token is refused", async () => {
    const url = env("BACKFILLER_AUTH_URL");
    const operator = new Client({ url, token: env("BACKFILLER_TOKEN") });
    const launched = await operator.launch(week(randomUUID()));
    assert.equal(launched.status, "REQUESTED");

    const viewer = new Client({ url, token: env("BACKFILLER_VIEWER_TOKEN") });
    assert.equal((await viewer.get(launched.id))?.id, launched.id);
    await assert.rejects(viewer.cancel(launched.id), (e: unknown) => {
      assert.ok(e instanceof AuthError);
      assert.equal(e.code, "FORBIDDEN");
      return true;
    });

    for (const token of ["not-a-token", undefined]) {
      const stranger = new Client(token === undefined ? { url } : { url, token });
      await assert.rejects(stranger.get(launched.id), (e: unknown) => {
        assert.ok(e instanceof AuthError);
        assert.equal(e.code, "UNAUTHENTICATED");
        return true;
      });
      await assert.rejects(stranger.launch(week("x")), AuthError);
    }
  });
});
