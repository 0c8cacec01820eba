// The client against live servers that tests/acceptance/test_typescript_client.py starts:
// BACKFILLER_URL (auth off), BACKFILLER_AUTH_URL (--auth token) with an operator token in
// BACKFILLER_TOKEN and a viewer token in BACKFILLER_VIEWER_TOKEN, and BACKFILLER_DOWN_URL
// where nothing listens.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";

import { AuthError, Client, TransportError, UserErrorsError } from "../src/index.js";
import type { LaunchBackfillInput } from "../src/index.js";

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
