import { describe, expect, it } from 'vitest';

import { IClosableModel, IKernelCommLike, releaseClosedComms } from '../src/leaks';

class Model implements IClosableModel {
  comm?: { jsServicesComm?: IKernelCommLike } | null;
  closedWith: unknown[][] = [];

  constructor(kernelComm: IKernelCommLike | null) {
    this.comm = kernelComm ? { jsServicesComm: kernelComm } : null;
  }

  close(...args: unknown[]): unknown {
    this.closedWith.push(args);
    delete this.comm; // as ipywidgets does while closing
    return 'closed';
  }
}

describe('releaseClosedComms', () => {
  it("replaces a closed model's comm callbacks, after its own close ran", () => {
    class Patched extends Model {}
    expect(releaseClosedComms(Patched.prototype)).toBe(true);
    const onMsg = (): string => 'model';
    const onClose = (): string => 'model';
    const kernelComm: IKernelCommLike = { onMsg, onClose };
    const model = new Patched(kernelComm);
    expect(model.close(true)).toBe('closed');
    expect(model.closedWith).toEqual([[true]]);
    expect(kernelComm.onMsg).not.toBe(onMsg);
    expect(kernelComm.onClose).not.toBe(onClose);
    expect((kernelComm.onMsg as () => unknown)()).toBeUndefined();
  });

  it('patches a prototype once, and closes a model without a comm', () => {
    class Patched extends Model {}
    expect(releaseClosedComms(Patched.prototype)).toBe(true);
    const patched = Patched.prototype.close;
    expect(releaseClosedComms(Patched.prototype)).toBe(false);
    expect(Patched.prototype.close).toBe(patched);
    const model = new Patched(null);
    expect(model.close()).toBe('closed');
    expect(model.closedWith).toEqual([[]]);
  });

  it('leaves an open model alone', () => {
    class Patched extends Model {}
    releaseClosedComms(Patched.prototype);
    const onMsg = (): string => 'model';
    const kernelComm: IKernelCommLike = { onMsg };
    new Patched(kernelComm);
    expect(kernelComm.onMsg).toBe(onMsg);
  });
});
