/** An answer that must be the problem document of this status and code (CONTRACT §1). */
export function expectProblem(
  res: { status: number; headers: Record<string, string>; body: { code?: string } },
  status: number,
  code: string,
): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
}
