/**
 * A small typed client of the Backfiller public GraphQL API (v1), on `fetch`.
 *
 * Types and documents come from `./generated/` (GraphQL Code Generator, from the committed
 * schema and `contracts/v1/operations/typescript_client.graphql`); this file only sends them.
 *
 * Expected failures (`userErrors`) are thrown as {@link UserErrorsError} with the typed
 * errors; a missing or refused token as {@link AuthError}; anything that keeps the request
 * from being answered as {@link TransportError}.
 */
import type { DocumentTypeDecoration } from "@graphql-typed-document-node/core";

import {
  CancelBackfillDocument,
  EvaluateTriggerDocument,
  GetAssetDocument,
  GetBackfillDocument,
  LaunchBackfillDocument,
  ListAssetsDocument,
  ListBackfillsDocument,
  ListTriggersDocument,
  MarkPartitionsDocument,
  PauseBackfillDocument,
  PreviewBackfillDocument,
  ResumeBackfillDocument,
  RetryBackfillDocument,
  UpdateBackfillDocument,
} from "./generated/operations.js";
import type {
  BackfillStatus,
  EvaluateTriggerMutation,
  GetAssetQuery,
  GetBackfillQuery,
  LaunchBackfillInput,
  ListTriggersQuery,
  MarkPartitionsInput,
  PreviewBackfillMutation,
  RetryInclude,
  TsAssetFragment,
  TsBackfillFragment,
  TsUserErrorFragment,
  UpdateBackfillInput,
  UserErrorCode,
} from "./generated/operations.js";

export type * from "./generated/operations.js";

/** A backfill as this client reads it. */
export type Backfill = TsBackfillFragment;
/** A backfill with its partitions folded into ranges of one status. */
export type BackfillDetail = NonNullable<GetBackfillQuery["backfill"]>;
/** Per asset of an asset backfill: its level, counts and partition status ranges. */
export type BackfillAsset = BackfillDetail["assets"][number];
export type BackfillPreview = NonNullable<PreviewBackfillMutation["previewBackfill"]["preview"]>;
/** An asset of the graph, with its upstream and downstream assets. */
export type Asset = TsAssetFragment;
/** An asset with one page of its partitions' latest statuses (any backfill), by key. */
export type AssetDetail = NonNullable<GetAssetQuery["asset"]>;
export type UserError = TsUserErrorFragment;
export type TriggerEvaluation = NonNullable<EvaluateTriggerMutation["evaluateTrigger"]["evaluation"]>;
export type Trigger = ListTriggersQuery["triggers"][number];

export interface BackfillPage {
  backfills: Backfill[];
  hasNextPage: boolean;
  /** Pass as `after` for the next page. */
  endCursor: string | null;
}

export interface ListOptions {
  first?: number;
  after?: string | null;
  statuses?: BackfillStatus[];
  job?: string;
  tag?: { key: string; value: string };
}

export interface AssetStatusesOptions {
  /** How many partition statuses, at most 1000 (100 by default). */
  first?: number;
  /** The last key of the previous page. */
  after?: string | null;
}

/** The `target` of an asset backfill: `names`, and optionally everything up or downstream. */
export function assetsTarget(
  names: string[],
  options: { upstream?: boolean; downstream?: boolean } = {},
): LaunchBackfillInput["target"] {
  return {
    assets: { names, upstream: options.upstream ?? false, downstream: options.downstream ?? false },
  };
}

export interface RetryOptions {
  /** Which partitions run again; `["FAILED"]` by default. */
  include?: RetryInclude[];
  idempotencyKey?: string;
}

/**
 * What `update` changes of a backfill: a field left out stays as it is; `null` removes the
 * limit (`maxConcurrentRuns`), the title or the description.
 */
export type BackfillChanges = Omit<UpdateBackfillInput, "id">;

export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Abort a request after this many milliseconds (default 30 000). */
  timeoutMs?: number;
  /** Another `fetch` (tests, proxies). */
  fetch?: typeof fetch;
}

/** Base class of every error this client throws. */
export class BackfillerError extends Error {
  override name = "BackfillerError";
}

/** The server refused the request as data: `userErrors`, each with a stable `code`. */
export class UserErrorsError extends BackfillerError {
  override name = "UserErrorsError";
  readonly userErrors: readonly UserError[];

  constructor(userErrors: readonly UserError[]) {
    super(userErrors.map((e) => `${e.code}: ${e.message}`).join("; "));
    this.userErrors = userErrors;
  }

  /** The code of the first error. */
  get code(): UserErrorCode {
    return this.userErrors[0]?.code ?? "INVALID_ARGUMENT";
  }

  has(code: UserErrorCode): boolean {
    return this.userErrors.some((e) => e.code === code);
  }
}

/** No valid token (`UNAUTHENTICATED`), or its role is too low (`FORBIDDEN`). */
export class AuthError extends BackfillerError {
  override name = "AuthError";
  constructor(
    message: string,
    readonly code: "UNAUTHENTICATED" | "FORBIDDEN",
  ) {
    super(message);
  }
}

/** The request got no usable answer: network, HTTP status, or a GraphQL-level error. */
export class TransportError extends BackfillerError {
  override name = "TransportError";
  constructor(
    message: string,
    readonly status: number | null = null,
    readonly errors: readonly GraphQLErrorBody[] = [],
  ) {
    super(message);
  }
}

export interface GraphQLErrorBody {
  message: string;
  extensions?: { code?: string; [key: string]: unknown };
}

type Document<R, V> = DocumentTypeDecoration<R, V> & { toString(): string };

const AUTH_CODES = new Set(["UNAUTHENTICATED", "FORBIDDEN"]);

function checkAuth(errors: readonly { code?: string | undefined; message: string }[]): void {
  const refused = errors.find((e) => e.code !== undefined && AUTH_CODES.has(e.code));
  if (refused) {
    throw new AuthError(refused.message, refused.code as "UNAUTHENTICATED" | "FORBIDDEN");
  }
}

function payload<T extends { userErrors: readonly UserError[] }>(value: T): T {
  if (value.userErrors.length > 0) {
    checkAuth(value.userErrors);
    throw new UserErrorsError(value.userErrors);
  }
  return value;
}

function backfillOf(value: { backfill: Backfill | null; userErrors: readonly UserError[] }): Backfill {
  const { backfill } = payload(value);
  if (backfill === null) {
    throw new TransportError("the server answered no backfill and no userErrors");
  }
  return backfill;
}

export class Client {
  readonly endpoint: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.endpoint = `${options.url.replace(/\/+$/, "")}/graphql/v1`;
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Run any generated document; the typed `data`, or a thrown error. */
  async execute<R, V>(document: Document<R, V>, variables: V): Promise<R> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
    };
    if (this.token !== undefined) {
      headers.authorization = `Bearer ${this.token}`;
    }
    let response: Response;
    try {
      response = await this.fetchImpl(this.endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify({ query: document.toString(), variables }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (cause) {
      throw new TransportError(`cannot reach ${this.endpoint}: ${String(cause)}`);
    }
    let body: { data?: R | null; errors?: GraphQLErrorBody[] };
    try {
      body = (await response.json()) as typeof body;
    } catch {
      throw new TransportError(`${this.endpoint} answered ${response.status}, not JSON`, response.status);
    }
    const errors = body.errors ?? [];
    checkAuth(errors.map((e) => ({ code: e.extensions?.code, message: e.message })));
    if (response.status === 401 || response.status === 403) {
      throw new AuthError(`the server answered ${response.status}`, response.status === 401 ? "UNAUTHENTICATED" : "FORBIDDEN");
    }
    if (errors.length > 0 || body.data == null) {
      const message = errors.map((e) => e.message).join("; ") || `HTTP ${response.status} without data`;
      throw new TransportError(message, response.status, errors);
    }
    return body.data;
  }

  /** Launch a backfill; the same idempotency key gives back the first one. */
  async launch(input: LaunchBackfillInput): Promise<Backfill> {
    const data = await this.execute(LaunchBackfillDocument, { input });
    return backfillOf(data.launchBackfill);
  }

  /** What launching would do. Writes nothing. */
  async preview(input: LaunchBackfillInput): Promise<BackfillPreview> {
    const data = await this.execute(PreviewBackfillDocument, { input });
    const { preview } = payload(data.previewBackfill);
    if (preview === null) {
      throw new TransportError("the server answered no preview and no userErrors");
    }
    return preview;
  }

  /** A backfill by id; `null` if there is none. */
  async get(id: string): Promise<BackfillDetail | null> {
    const data = await this.execute(GetBackfillDocument, { id });
    return data.backfill;
  }

  /** One page of backfills, newest first. */
  async list(options: ListOptions = {}): Promise<BackfillPage> {
    const filter =
      options.statuses || options.job || options.tag
        ? { statuses: options.statuses ?? null, job: options.job ?? null, tag: options.tag ?? null }
        : null;
    const data = await this.execute(ListBackfillsDocument, {
      first: options.first ?? 20,
      after: options.after ?? null,
      filter,
    });
    return {
      backfills: data.backfills.nodes,
      hasNextPage: data.backfills.pageInfo.hasNextPage,
      endCursor: data.backfills.pageInfo.endCursor,
    };
  }

  async pause(id: string): Promise<Backfill> {
    return backfillOf((await this.execute(PauseBackfillDocument, { id })).pauseBackfill);
  }

  async resume(id: string): Promise<Backfill> {
    return backfillOf((await this.execute(ResumeBackfillDocument, { id })).resumeBackfill);
  }

  async cancel(id: string): Promise<Backfill> {
    return backfillOf((await this.execute(CancelBackfillDocument, { id })).cancelBackfill);
  }

  /** Launch partitions of a finished backfill again, as a new backfill whose parent it is. */
  async retry(id: string, options: RetryOptions = {}): Promise<Backfill> {
    const input = {
      id,
      include: options.include ?? null,
      idempotencyKey: options.idempotencyKey ?? null,
    };
    return backfillOf((await this.execute(RetryBackfillDocument, { input })).retryBackfill);
  }

  /**
   * Change a backfill that is not finished: its limit, priority, title or description (see
   * {@link BackfillChanges}). A lower limit holds from the daemon's next claim; runs in flight
   * finish.
   */
  async update(id: string, changes: BackfillChanges): Promise<Backfill> {
    const input = { ...changes, id };
    return backfillOf((await this.execute(UpdateBackfillDocument, { input })).updateBackfill);
  }

  /**
   * Record partitions of a job (or assets) as `SUCCEEDED` or `SKIPPED` without running them,
   * with a reason (audited); returns how many. A backfill running one of them refuses it all
   * with `PARTITIONS_RUNNING`.
   */
  async markPartitions(input: MarkPartitionsInput): Promise<number> {
    return payload((await this.execute(MarkPartitionsDocument, { input })).markPartitions).marked;
  }

  /** Every asset of the graph, in dependency order. */
  async assets(): Promise<Asset[]> {
    return (await this.execute(ListAssetsDocument, {})).assets;
  }

  /**
   * An asset by name, with one page of its partitions' latest statuses by key (pass the last
   * key as `after` for the next page); `null` if there is none.
   */
  async asset(name: string, options: AssetStatusesOptions = {}): Promise<AssetDetail | null> {
    const data = await this.execute(GetAssetDocument, {
      name,
      first: options.first ?? 100,
      after: options.after ?? null,
    });
    return data.asset;
  }

  /** Every trigger of the definitions, by name. */
  async triggers(): Promise<Trigger[]> {
    return (await this.execute(ListTriggersDocument, {})).triggers;
  }

  /**
   * Evaluate a trigger now and launch what it returns; with `dryRun`, launch nothing and
   * preview its requests. A trigger that fails is an evaluation with outcome `FAILED`.
   */
  async evaluateTrigger(name: string, options: { dryRun?: boolean } = {}): Promise<TriggerEvaluation> {
    const data = await this.execute(EvaluateTriggerDocument, { name, dryRun: options.dryRun ?? false });
    const { evaluation } = payload(data.evaluateTrigger);
    if (evaluation === null) {
      throw new TransportError("the server answered no evaluation and no userErrors");
    }
    return evaluation;
  }
}
