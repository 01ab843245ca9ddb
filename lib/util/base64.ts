/**
 * The decoded size of base64 data, the one count every image and audio marker uses
 * (`[image: image/png, 12345 bytes]`, SPEC section 6.7): the `tool-end` event, the text sent
 * to the model and the compaction summary request all say the same size for one image.
 * @module
 */

/**
 * The number of bytes base64 `data` decodes to, without decoding it: padding (`=`), line
 * breaks and any other character outside the base64 and base64url alphabets are not counted,
 * so padded, unpadded and MIME-wrapped forms of the same bytes agree.
 * @example base64DecodedBytes("aGk=") // 2 ("hi")
 */
export function base64DecodedBytes(data: string): number {
  const digits = data.replace(/[^A-Za-z0-9+/_-]/g, "").length;
  return Math.floor((digits * 3) / 4);
}
