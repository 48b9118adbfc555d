/**
 * Cursor pagination. A list call returns a {@link PageRequest}: `await` it for one page, or
 * `for await` over it for every item of every page, fetched as the loop reaches them.
 */

/** The list object the API answers: `{object: "list", data, has_more}` (and extras, such as the statement's totals). */
export interface ListResponse<T> {
  data: T[];
  has_more: boolean;
}

export class Page<T, L extends ListResponse<T> = ListResponse<T>> {
  /** The items of this page, in the API's order (newest first). */
  readonly data: T[];
  /** Whether more items follow this page. */
  readonly hasMore: boolean;
  /** The whole list object, e.g. the statement's `totals`. */
  readonly response: L;

  constructor(
    response: L,
    private readonly fetchAfter: (cursor: string) => Promise<L>,
    private readonly cursorOf: (item: T) => string,
  ) {
    this.response = response;
    this.data = response.data;
    this.hasMore = response.has_more;
  }

  /** The next page, or `null` after the last one. */
  async nextPage(): Promise<Page<T, L> | null> {
    const last = this.data[this.data.length - 1];
    if (!this.hasMore || last === undefined) return null;
    return new Page(await this.fetchAfter(this.cursorOf(last)), this.fetchAfter, this.cursorOf);
  }
}

export class PageRequest<T, L extends ListResponse<T> = ListResponse<T>>
  implements PromiseLike<Page<T, L>>, AsyncIterable<T>
{
  constructor(
    private readonly fetch: (cursor: string | undefined) => Promise<L>,
    private readonly cursorOf: (item: T) => string,
    private readonly startingAfter?: string,
  ) {}

  private first(): Promise<Page<T, L>> {
    return this.fetch(this.startingAfter).then((r) => new Page(r, (c) => this.fetch(c), this.cursorOf));
  }

  then<A = Page<T, L>, B = never>(
    onfulfilled?: ((value: Page<T, L>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.first().then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<Page<T, L> | B> {
    return this.first().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page<T, L>> {
    return this.first().finally(onfinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page: Page<T, L> | null = await this.first();
    while (page) {
      yield* page.data;
      page = await page.nextPage();
    }
  }

  /** Every item of every page, in one array: for lists known to be small. */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
