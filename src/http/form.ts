import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { ApiError } from '../kernel/errors';
import type { FormBody, FormSpec } from '../kernel/route';

/**
 * Reads a multipart/form-data body (busboy parses it) into the fields and files a route declares,
 * each bounded in bytes as it streams: past a bound the request is a 413 and the rest is not kept;
 * an undeclared or repeated part is a 400; another media type a 415. Memory stays within the sum
 * of the route's bounds.
 */
export function readForm(req: IncomingMessage, form: FormSpec): Promise<FormBody> {
  const type = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'multipart/form-data') {
    return Promise.reject(new ApiError('unsupported_media_type', 'send the body as multipart/form-data'));
  }
  const largest = Math.max(0, ...Object.values(form.fields).map((f) => f.maxBytes), ...Object.values(form.files).map((f) => f.maxBytes));
  const fieldCount = Object.keys(form.fields).length;
  const fileCount = Object.keys(form.files).length;
  return new Promise<FormBody>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // One part more than declared, so the extra one is seen (and refused) by its name.
        limits: {
          fieldSize: largest + 1,
          fileSize: largest + 1,
          fields: fieldCount + 1,
          files: fileCount + 1,
          parts: fieldCount + fileCount + 1,
        },
      });
    } catch {
      reject(new ApiError('invalid_request', 'the multipart body has no boundary'));
      return;
    }
    const body: FormBody = { fields: {}, files: {} };
    let failed: ApiError | undefined;
    const fail = (error: ApiError) => {
      failed ??= error;
      // Read on to the end (so the answer can be written), keeping nothing.
    };
    const part = (name: string) => ({ path: `body.${name}` });
    parser.on('field', (name, value, info) => {
      const spec = form.fields[name];
      if (!spec || name in body.fields)
        return fail(
          new ApiError('invalid_request', `no field ${name}`, {
            errors: [{ ...part(name), message: 'not a field of this form, or twice' }],
          }),
        );
      if (info.valueTruncated || Buffer.byteLength(value) > spec.maxBytes)
        return fail(new ApiError('payload_too_large', `${name} is over ${spec.maxBytes} bytes`));
      body.fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      const spec = form.files[name];
      if (!spec || name in body.files) {
        stream.resume();
        return fail(
          new ApiError('invalid_request', `no file ${name}`, { errors: [{ ...part(name), message: 'not a file of this form, or twice' }] }),
        );
      }
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= spec.maxBytes) chunks.push(chunk);
      });
      stream.on('end', () => {
        if (size > spec.maxBytes) fail(new ApiError('payload_too_large', `${name} is over ${spec.maxBytes} bytes`));
        else body.files[name] = Buffer.concat(chunks);
      });
    });
    const tooMany = () => fail(new ApiError('invalid_request', 'the form has more parts than it declares'));
    parser.on('partsLimit', tooMany);
    parser.on('filesLimit', tooMany);
    parser.on('fieldsLimit', tooMany);
    parser.on('error', () => fail(new ApiError('invalid_request', 'the multipart body is malformed')));
    parser.on('close', () => (failed ? reject(failed) : resolve(body)));
    req.on('error', () => fail(new ApiError('invalid_request', 'the body was cut off')));
    req.pipe(parser);
  });
}
