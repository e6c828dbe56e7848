/** A failure the model should read and may correct, rather than one that ends the run. */
export class ToolInputError extends Error {}
